import { randomUUID } from 'node:crypto';
import {
  EVENTS_CHANNEL,
  EventRepository,
  OutboundWebhookRepository,
  publicEvent,
  type DataSource,
  type OutboundWebhook,
  type PgNotifications,
  type StoredEvent,
} from '@slipway/db';
import { enqueueInOutbox } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';

const WEBHOOKS_PER_PASS = 20;
const EVENTS_PER_WEBHOOK = 500;
/**
 * How long a notification waits for others before its pass: every status change of every
 * deployment notifies, so under a create load a pass per notification was a transaction per
 * event in every worker process, most finding nothing to send.
 */
export const FANOUT_WAKE_BATCH_MS = 100;

const matches = (w: OutboundWebhook, e: StoredEvent) =>
  w.event_types.includes(e.type) &&
  (!w.deployment_ids || (e.deployment_id !== null && w.deployment_ids.includes(e.deployment_id)));

/**
 * Turns events into webhook deliveries (docs/architecture.md, Events). In one transaction per
 * pass it claims webhooks with events past their cursor, writes a delivery and an outbox row
 * (the `deliver.webhook` job) for each matching event, and moves the cursor: a crash before
 * the commit leaves everything to the next pass, and the unique (webhook, event) pair keeps a
 * repeat from writing twice. Runs in every worker process; `SKIP LOCKED` keeps them apart.
 * Notifications are batched: the first wakes a pass `wakeBatchMs` later, and those arriving
 * meanwhile (or during the pass) ride on it, so a pass runs at most about every `wakeBatchMs`
 * however many events commit.
 */
export class WebhookFanout {
  private timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (ms since the epoch), while one is pending. */
  private dueAt: number | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly log: Logger,
    private readonly pollMs: number,
    /** Wakes a pass soon after an event commits; polling remains the fallback. */
    private readonly notifications?: PgNotifications,
    private readonly wakeBatchMs = FANOUT_WAKE_BATCH_MS,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.unsubscribe = this.notifications?.subscribe(EVENTS_CHANNEL, () => this.wake());
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unsubscribe?.();
    await this.running;
  }

  /** Fans out everything pending; returns how many deliveries were written. Tests call this. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const { webhooks, written } = await this.pass();
      total += written;
      if (webhooks === 0) return total;
    }
  }

  /** A pass within `wakeBatchMs`: one already due sooner stands, so notifications never push it back. */
  private wake(): void {
    if (this.running) this.again = true;
    else if (this.dueAt === undefined || this.dueAt > Date.now() + this.wakeBatchMs) this.schedule(this.wakeBatchMs);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.dueAt = Date.now() + delay;
    this.timer = setTimeout(() => {
      this.dueAt = undefined;
      this.again = false;
      this.running = this.drain()
        .then(() => undefined)
        .catch((err) => this.log.warn({ err }, 'webhook fan-out pass failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.again ? this.wakeBatchMs : this.pollMs);
        });
    }, delay);
  }

  private pass(): Promise<{ webhooks: number; written: number }> {
    return this.dataSource.transaction(async (manager) => {
      const hooks = new OutboundWebhookRepository(manager);
      const events = new EventRepository(manager);
      const due = await hooks.due(WEBHOOKS_PER_PASS);
      let written = 0;
      for (const webhook of due) {
        const batch = await events.after(webhook.workspace_id, webhook.last_event_id, EVENTS_PER_WEBHOOK);
        const wanted = batch.filter((e) => matches(webhook, e));
        const ids = await hooks.insertDeliveries(
          wanted.map((e) => ({
            id: randomUUID(),
            webhookId: webhook.id,
            eventId: e.id,
            eventType: e.type,
            payload: publicEvent(e),
          })),
        );
        for (const deliveryId of ids) await enqueueInOutbox(manager, 'deliver.webhook', { deliveryId, round: 0 });
        written += ids.length;
        if (batch.length) await hooks.advanceCursor(webhook.id, batch.at(-1)!.id);
      }
      return { webhooks: due.length, written };
    });
  }
}
