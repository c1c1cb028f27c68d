import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Replay protection for push webhooks bound to what the host signed: the SHA-256 of the signed
 * body of every push that was acted on. The delivery id header is not signed, so a captured push
 * re-sent under a fresh id is still the same body, and the unique index refuses it.
 */
export class WebhookReplay1764200000000 implements MigrationInterface {
  name = 'WebhookReplay1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN payload_sha256 text`);
    await q.query(
      `CREATE UNIQUE INDEX webhook_deliveries_payload_key ON webhook_deliveries (integration_id, ` +
        `payload_sha256) WHERE payload_sha256 IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX webhook_deliveries_payload_key`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN payload_sha256`);
  }
}
