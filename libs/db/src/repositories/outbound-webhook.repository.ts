import type { EntityManager } from 'typeorm';
import type { Page } from './pagination.js';
import { queryRows } from '../sql.js';

/** `standard`: the event as JSON; `slack`: a Slack incoming-webhook message. */
export type OutboundWebhookFormat = 'standard' | 'slack';

/** A subscription of a URL to events of its workspace (docs/api.md, Events and webhooks). */
export interface OutboundWebhook {
  id: string;
  workspace_id: string;
  url: string;
  format: OutboundWebhookFormat;
  description: string | null;
  event_types: string[];
  /** Only these deployments' events; null: every deployment's. */
  deployment_ids: string[] | null;
  secret_sealed: string;
  last_event_id: string;
  created_at: Date;
  updated_at: Date;
}

export interface OutboundWebhookInput {
  id: string;
  workspaceId: string;
  url: string;
  format: OutboundWebhookFormat;
  description: string | null;
  eventTypes: string[];
  deploymentIds: string[] | null;
  secretSealed: string;
}

export interface OutboundWebhookChanges {
  url?: string;
  format?: OutboundWebhookFormat;
  description?: string | null;
  eventTypes?: string[];
  deploymentIds?: string[] | null;
}

export type OutboundDeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface OutboundDeliveryAttempt {
  round: number;
  attempt: number;
  attempted_at: Date;
  duration_ms: number;
  response_status: number | null;
  error: string | null;
}

export interface OutboundDelivery {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  status: OutboundDeliveryStatus;
  round: number;
  created_at: Date;
  updated_at: Date;
  attempts: OutboundDeliveryAttempt[];
}

/** A delivery with what sending it needs: its webhook's URL and sealed secret. */
export interface OutboundDeliveryTarget {
  delivery: Omit<OutboundDelivery, 'attempts'>;
  url: string;
  format: OutboundWebhookFormat;
  secret_sealed: string;
}

/**
 * The type of a test delivery's event (`POST /v2/webhooks/{id}/test`). No stored event has it:
 * a test is delivered to its one webhook and never enters the workspace's event feed.
 */
export const TEST_EVENT_TYPE = 'webhook.test';

/** One delivery to write: an event matched to a webhook during fan-out, or a test. */
export interface NewOutboundDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  payload: Record<string, unknown>;
}

const COLUMNS =
  `id, workspace_id, url, format, description, event_types, deployment_ids, secret_sealed, ` +
  `last_event_id::text AS last_event_id, created_at, updated_at`;
const DELIVERY_COLUMNS =
  `d.id, d.webhook_id, d.event_id::text AS event_id, d.event_type, d.payload, d.status, ` +
  `d.round, d.created_at, d.updated_at`;

/**
 * Outbound webhooks, their deliveries and every attempt of each. The fan-out reads (`due`)
 * claim webhooks with `FOR UPDATE SKIP LOCKED`, so two processes never fan one out at once.
 */
export class OutboundWebhookRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * Creates the webhook with its cursor at the workspace's newest event: it receives what
   * happens from now on. An event committing after this read gets a larger id (ids are given
   * at commit), so nothing that happens after the webhook exists is passed over.
   */
  async insert(w: OutboundWebhookInput): Promise<OutboundWebhook> {
    const [row] = await queryRows<OutboundWebhook>(
      this.manager,
      `INSERT INTO outbound_webhooks (id, workspace_id, url, description, event_types, deployment_ids, secret_sealed, format, last_event_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, (SELECT coalesce(max(id), 0) FROM events WHERE workspace_id = $2 AND id IS NOT NULL))
       RETURNING ${COLUMNS}`,
      [w.id, w.workspaceId, w.url, w.description, w.eventTypes, w.deploymentIds, w.secretSealed, w.format],
    );
    return row!;
  }

  async find(workspaceId: string, id: string): Promise<OutboundWebhook | null> {
    const [row] = await queryRows<OutboundWebhook>(
      this.manager,
      `SELECT ${COLUMNS} FROM outbound_webhooks WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
    );
    return row ?? null;
  }

  list(workspaceId: string, page: Page): Promise<OutboundWebhook[]> {
    return queryRows<OutboundWebhook>(
      this.manager,
      `SELECT ${COLUMNS} FROM outbound_webhooks WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
      [workspaceId, page.limit, page.offset],
    );
  }

  async update(workspaceId: string, id: string, c: OutboundWebhookChanges): Promise<OutboundWebhook | null> {
    const [row] = await queryRows<OutboundWebhook>(
      this.manager,
      `UPDATE outbound_webhooks SET
         url = CASE WHEN $3 THEN $4 ELSE url END,
         description = CASE WHEN $5 THEN $6 ELSE description END,
         event_types = CASE WHEN $7 THEN $8::text[] ELSE event_types END,
         deployment_ids = CASE WHEN $9 THEN $10::uuid[] ELSE deployment_ids END,
         format = coalesce($11, format),
         updated_at = now()
       WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [
        workspaceId,
        id,
        c.url !== undefined,
        c.url ?? null,
        c.description !== undefined,
        c.description ?? null,
        c.eventTypes !== undefined,
        c.eventTypes ?? null,
        c.deploymentIds !== undefined,
        c.deploymentIds ?? null,
        c.format ?? null,
      ],
    );
    return row ?? null;
  }

  /** Deletes the webhook with its deliveries; jobs still queued for them find nothing and end. */
  async delete(workspaceId: string, id: string): Promise<boolean> {
    const rows = await queryRows(
      this.manager,
      `DELETE FROM outbound_webhooks WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [workspaceId, id],
    );
    return rows.length > 0;
  }

  // ---------------------------------------------------------------- fan-out

  /** Webhooks whose workspace has events past their cursor, locked for this transaction. */
  due(limit: number): Promise<OutboundWebhook[]> {
    return queryRows<OutboundWebhook>(
      this.manager,
      `SELECT ${COLUMNS} FROM outbound_webhooks w
        WHERE EXISTS (SELECT 1 FROM events e WHERE e.workspace_id = w.workspace_id AND e.id > w.last_event_id)
        ORDER BY w.id LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
  }

  /** Writes deliveries (a repeat of one is ignored) and returns the ids of those written now. */
  async insertDeliveries(deliveries: NewOutboundDelivery[]): Promise<string[]> {
    if (!deliveries.length) return [];
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `INSERT INTO outbound_deliveries (id, webhook_id, event_id, event_type, payload)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::jsonb[])
       ON CONFLICT ON CONSTRAINT outbound_deliveries_event_unique DO NOTHING RETURNING id`,
      [
        deliveries.map((d) => d.id),
        deliveries.map((d) => d.webhookId),
        deliveries.map((d) => d.eventId),
        deliveries.map((d) => d.eventType),
        deliveries.map((d) => JSON.stringify(d.payload)),
      ],
    );
    return rows.map((r) => r.id);
  }

  /**
   * An event id for a delivery of no stored event (a test): taken from the events' own
   * sequence, so it never equals a real event's id and sorts among them by time.
   */
  async reserveEventId(): Promise<string> {
    const [row] = await queryRows<{ id: string }>(this.manager, `SELECT nextval('events_id_seq')::text AS id`);
    return row!.id;
  }

  async advanceCursor(webhookId: string, lastEventId: string): Promise<void> {
    await this.manager.query(
      `UPDATE outbound_webhooks SET last_event_id = greatest(last_event_id, $2::bigint) WHERE id = $1`,
      [webhookId, lastEventId],
    );
  }

  // ---------------------------------------------------------------- deliveries

  /** A page of the webhook's deliveries, newest event first, each with its attempts. */
  listDeliveries(webhookId: string, page: Page): Promise<OutboundDelivery[]> {
    return queryRows<OutboundDelivery>(
      this.manager,
      `SELECT ${DELIVERY_COLUMNS}, ${ATTEMPTS} FROM outbound_deliveries d
        WHERE d.webhook_id = $1 ORDER BY d.event_id DESC LIMIT $2 OFFSET $3`,
      [webhookId, page.limit, page.offset],
    );
  }

  async findDelivery(webhookId: string, id: string): Promise<OutboundDelivery | null> {
    const [row] = await queryRows<OutboundDelivery>(
      this.manager,
      `SELECT ${DELIVERY_COLUMNS}, ${ATTEMPTS} FROM outbound_deliveries d WHERE d.webhook_id = $1 AND d.id = $2`,
      [webhookId, id],
    );
    return row ?? null;
  }

  /** The delivery with its target, or null when it (or its webhook) was deleted. */
  async target(deliveryId: string): Promise<OutboundDeliveryTarget | null> {
    const [row] = await queryRows<
      Omit<OutboundDelivery, 'attempts'> & { url: string; format: OutboundWebhookFormat; secret_sealed: string }
    >(
      this.manager,
      `SELECT ${DELIVERY_COLUMNS}, w.url, w.format, w.secret_sealed FROM outbound_deliveries d ` +
        `JOIN outbound_webhooks w ON w.id = d.webhook_id WHERE d.id = $1`,
      [deliveryId],
    );
    if (!row) return null;
    const { url, format, secret_sealed, ...delivery } = row;
    return { delivery, url, format, secret_sealed };
  }

  async recordAttempt(deliveryId: string, a: Omit<OutboundDeliveryAttempt, 'attempted_at'>): Promise<void> {
    await this.manager.query(
      `INSERT INTO outbound_delivery_attempts (delivery_id, round, attempt, duration_ms, response_status, ` +
        `error) VALUES ($1, $2, $3, $4, $5, $6)`,
      [deliveryId, a.round, a.attempt, a.duration_ms, a.response_status, a.error],
    );
  }

  /** Ends a round: only the round still running may end, so a stale job never overwrites a redelivery. */
  async finish(deliveryId: string, round: number, status: Exclude<OutboundDeliveryStatus, 'pending'>): Promise<void> {
    await this.manager.query(
      `UPDATE outbound_deliveries SET status = $3, updated_at = now() WHERE id = $1 AND round = $2 AND status = 'pending'`,
      [deliveryId, round, status],
    );
  }

  /** Pending deliveries not changed for `seconds`, oldest first (the reconciler checks their jobs). */
  quietPending(seconds: number, limit: number): Promise<Array<{ id: string; round: number }>> {
    return queryRows(
      this.manager,
      `SELECT id, round FROM outbound_deliveries
        WHERE status = 'pending' AND updated_at < now() - make_interval(secs => $1)
        ORDER BY updated_at LIMIT $2`,
      [seconds, limit],
    );
  }

  /** Starts another round of a finished delivery; null when it is still pending (or gone). */
  async startRound(deliveryId: string): Promise<number | null> {
    const [row] = await queryRows<{ round: number }>(
      this.manager,
      `UPDATE outbound_deliveries SET status = 'pending', round = round + 1, updated_at = now()
        WHERE id = $1 AND status <> 'pending' RETURNING round`,
      [deliveryId],
    );
    return row?.round ?? null;
  }
}

const ATTEMPTS = `coalesce((SELECT jsonb_agg(jsonb_build_object(
    'round', a.round, 'attempt', a.attempt, 'attempted_at', a.attempted_at, 'duration_ms', a.duration_ms,
    'response_status', a.response_status, 'error', a.error) ORDER BY a.id)
  FROM outbound_delivery_attempts a WHERE a.delivery_id = d.id), '[]'::jsonb) AS attempts`;
