import { randomUUID } from 'node:crypto';
import type { Config } from '@slipway/config';
import { generateWebhookSecret, type SecretsCodec } from '@slipway/crypto';
import {
  OutboundWebhookRepository,
  TEST_EVENT_TYPE,
  type DataSource,
  type OutboundWebhook,
  type Page,
  type OutboundDelivery,
} from '@slipway/db';
import { ConflictError, NotFoundError } from '@slipway/domain';
import { enqueueInOutbox } from '@slipway/jobs';
import { iso } from '../schemas/common.schema.js';
import { checkOutboundField } from './outbound-url.js';
import type { CreateOutboundWebhookBody, PatchOutboundWebhookBody } from '../schemas/outbound-webhook.schema.js';

/** The API shape of a webhook; its secret is never part of it after creation. */
export function presentOutboundWebhook(w: OutboundWebhook) {
  return {
    id: w.id,
    url: w.url,
    format: w.format,
    description: w.description,
    event_types: w.event_types,
    deployment_ids: w.deployment_ids,
    created_at: iso(w.created_at)!,
    updated_at: iso(w.updated_at)!,
  };
}

const isoOf = (t: Date | string) => new Date(t).toISOString();

/** The API shape of a delivery with its attempts. */
export function presentWebhookDelivery(d: OutboundDelivery) {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    created_at: iso(d.created_at)!,
    updated_at: iso(d.updated_at)!,
    event: d.payload,
    attempts: d.attempts.map((a) => ({ ...a, attempted_at: isoOf(a.attempted_at) })),
  };
}

export type OutboundWebhookView = ReturnType<typeof presentOutboundWebhook>;
export type WebhookDeliveryView = ReturnType<typeof presentWebhookDelivery>;

/**
 * Outbound webhooks of a workspace (docs/api.md, Events and webhooks): subscriptions, their
 * deliveries, test deliveries and redelivery. Event deliveries are written by the fan-out and
 * everything is sent by the `webhooks` worker; this side only records intent (an outbox row).
 */
export class OutboundWebhookService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
    private readonly config: Pick<Config, 'outbound'>,
  ) {}

  private repo(manager = this.dataSource.manager): OutboundWebhookRepository {
    return new OutboundWebhookRepository(manager);
  }

  /** Creates the webhook; its secret is in this answer and nowhere else, ever. */
  async create(
    workspaceId: string,
    body: CreateOutboundWebhookBody,
  ): Promise<OutboundWebhookView & { secret: string }> {
    await this.checkUrl(body.url);
    const id = randomUUID();
    const secret = generateWebhookSecret();
    const webhook = await this.repo().insert({
      id,
      workspaceId,
      url: body.url,
      format: body.format ?? 'standard',
      description: body.description || null,
      eventTypes: body.event_types,
      deploymentIds: body.deployment_ids ?? null,
      // Bound to the row: a sealed secret copied to another webhook does not open there.
      secretSealed: this.secrets.seal(secret, id),
    });
    return { ...presentOutboundWebhook(webhook), secret };
  }

  async list(workspaceId: string, page: Page): Promise<OutboundWebhookView[]> {
    return (await this.repo().list(workspaceId, page)).map(presentOutboundWebhook);
  }

  async get(workspaceId: string, id: string): Promise<OutboundWebhookView> {
    return presentOutboundWebhook(await this.load(workspaceId, id));
  }

  async patch(workspaceId: string, id: string, body: PatchOutboundWebhookBody): Promise<OutboundWebhookView> {
    if (body.url !== undefined) await this.checkUrl(body.url);
    const updated = await this.repo().update(workspaceId, id, {
      url: body.url,
      format: body.format,
      description: body.description === undefined ? undefined : body.description || null,
      eventTypes: body.event_types,
      deploymentIds: body.deployment_ids,
    });
    if (!updated) throw NotFoundError.of('Webhook', id);
    return presentOutboundWebhook(updated);
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    if (!(await this.repo().delete(workspaceId, id))) throw NotFoundError.of('Webhook', id);
  }

  async deliveries(workspaceId: string, id: string, page: Page): Promise<WebhookDeliveryView[]> {
    await this.load(workspaceId, id);
    return (await this.repo().listDeliveries(id, page)).map(presentWebhookDelivery);
  }

  /**
   * Sends a finished delivery again, as a new round with the same `webhook-id` (receivers
   * dedupe on it). The new round and its job commit together; 409 while a round is running.
   */
  async redeliver(workspaceId: string, webhookId: string, deliveryId: string): Promise<WebhookDeliveryView> {
    await this.load(workspaceId, webhookId);
    return this.dataSource.transaction(async (manager) => {
      const repo = this.repo(manager);
      if (!(await repo.findDelivery(webhookId, deliveryId))) throw NotFoundError.of('Delivery', deliveryId);
      const round = await repo.startRound(deliveryId);
      if (round === null)
        throw new ConflictError(
          `Delivery ID '${deliveryId}' is still being attempted; redeliver it once it has succeeded or failed.`,
        );
      await enqueueInOutbox(manager, 'deliver.webhook', { deliveryId, round });
      return presentWebhookDelivery((await repo.findDelivery(webhookId, deliveryId))!);
    });
  }

  /**
   * Records a `webhook.test` delivery for this webhook alone and queues it like any other: the
   * same worker, signature, retries and history. Its event is synthetic (an id from the events'
   * sequence, no deployment) and never stored as a workspace event, so the event feed and the
   * other webhooks never see it. The delivery and its job commit together.
   */
  async test(workspaceId: string, webhookId: string, requestedBy: string): Promise<WebhookDeliveryView> {
    await this.load(workspaceId, webhookId);
    return this.dataSource.transaction(async (manager) => {
      const repo = this.repo(manager);
      const eventId = await repo.reserveEventId();
      const event = {
        id: eventId,
        type: TEST_EVENT_TYPE,
        created_at: new Date().toISOString(),
        deployment_id: null,
        revision_id: null,
        data: { webhook_id: webhookId, requested_by: requestedBy },
      };
      const [deliveryId] = await repo.insertDeliveries([
        { id: randomUUID(), webhookId, eventId, eventType: TEST_EVENT_TYPE, payload: event },
      ]);
      await enqueueInOutbox(manager, 'deliver.webhook', { deliveryId: deliveryId!, round: 0 });
      return presentWebhookDelivery((await repo.findDelivery(webhookId, deliveryId!))!);
    });
  }

  private async load(workspaceId: string, id: string): Promise<OutboundWebhook> {
    const webhook = await this.repo().find(workspaceId, id);
    if (!webhook) throw NotFoundError.of('Webhook', id);
    return webhook;
  }

  private checkUrl(url: string): Promise<void> {
    return checkOutboundField(url, this.config.outbound, ['body', 'url']);
  }
}
