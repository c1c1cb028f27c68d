import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Outbound webhooks (docs/api.md, Events and webhooks). Each webhook keeps its own fan-out
 * cursor, `last_event_id`: the events of its workspace up to there have been matched and their
 * deliveries written. Event ids grow in commit order within a workspace, so a cursor per
 * webhook (never one across workspaces) cannot pass over an event that commits late.
 * A delivery is one event for one webhook (unique, so a repeated fan-out writes nothing);
 * every HTTP attempt of it is a row of its own.
 */
export class OutboundWebhooks1764500000100 implements MigrationInterface {
  name = 'OutboundWebhooks1764500000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE outbound_webhooks (
        id             uuid PRIMARY KEY,
        workspace_id   uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        url            text NOT NULL,
        description    text,
        event_types    text[] NOT NULL,
        deployment_ids uuid[],
        secret_sealed  text NOT NULL,
        last_event_id  bigint NOT NULL DEFAULT 0,
        created_at     timestamptz NOT NULL DEFAULT now(),
        updated_at     timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX outbound_webhooks_workspace_idx ON outbound_webhooks (workspace_id, created_at, id)`);
    await q.query(`
      CREATE TABLE outbound_deliveries (
        id           uuid PRIMARY KEY,
        webhook_id   uuid NOT NULL REFERENCES outbound_webhooks(id) ON DELETE CASCADE,
        event_id     bigint NOT NULL,
        event_type   text NOT NULL,
        payload      jsonb NOT NULL,
        status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
        round        integer NOT NULL DEFAULT 0,
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT outbound_deliveries_event_unique UNIQUE (webhook_id, event_id)
      )`);
    await q.query(`CREATE INDEX outbound_deliveries_list_idx ON outbound_deliveries (webhook_id, event_id DESC)`);
    await q.query(`
      CREATE TABLE outbound_delivery_attempts (
        id              bigserial PRIMARY KEY,
        delivery_id     uuid NOT NULL REFERENCES outbound_deliveries(id) ON DELETE CASCADE,
        round           integer NOT NULL,
        attempt         integer NOT NULL,
        attempted_at    timestamptz NOT NULL DEFAULT now(),
        duration_ms     integer NOT NULL,
        response_status integer,
        error           text
      )`);
    await q.query(
      `CREATE INDEX outbound_delivery_attempts_delivery_idx ON outbound_delivery_attempts (delivery_id, id)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE outbound_delivery_attempts`);
    await q.query(`DROP TABLE outbound_deliveries`);
    await q.query(`DROP TABLE outbound_webhooks`);
  }
}
