import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The body format of an outbound webhook (docs/api.md, Events and webhooks): `standard` (the
 * event as JSON) or `slack` (a Slack incoming-webhook message, `{"text"}`).
 */
export class WebhookFormat1764500000101 implements MigrationInterface {
  name = 'WebhookFormat1764500000101';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE outbound_webhooks ADD COLUMN format text NOT NULL DEFAULT 'standard' CHECK (format IN ('standard', 'slack'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbound_webhooks DROP COLUMN format`);
  }
}
