import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Quotas and retention (docs/operations.md, Quotas and retention): per-workspace overrides of the
 * configured default quotas (NULL = the default), when a revision's artifact was pruned (a
 * redeploy of it rebuilds), and the indexes the retention pass deletes by.
 */
export class QuotasRetention1764200000001 implements MigrationInterface {
  name = 'QuotasRetention1764200000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE workspace_quotas (
        workspace_id            uuid PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
        deployments             integer CHECK (deployments >= 0),
        min_scale               integer CHECK (min_scale >= 0),
        max_scale               integer CHECK (max_scale >= 1),
        uploads_per_day         integer CHECK (uploads_per_day >= 0),
        upload_bytes            bigint CHECK (upload_bytes >= 0),
        log_lines_per_revision  integer CHECK (log_lines_per_revision >= 1),
        log_lines_total         bigint CHECK (log_lines_total >= 1),
        artifacts_kept          integer CHECK (artifacts_kept >= 0),
        updated_at              timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`ALTER TABLE revisions ADD COLUMN artifact_pruned_at timestamptz`);
    await q.query(`CREATE INDEX uploads_deployment_created_idx ON uploads (deployment_id, created_at)`);
    await q.query(`CREATE INDEX outbox_sent_idx ON outbox (sent_at) WHERE sent_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX outbox_sent_idx`);
    await q.query(`DROP INDEX uploads_deployment_created_idx`);
    await q.query(`ALTER TABLE revisions DROP COLUMN artifact_pruned_at`);
    await q.query(`DROP TABLE workspace_quotas`);
  }
}
