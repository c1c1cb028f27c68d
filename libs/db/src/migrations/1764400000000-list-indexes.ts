import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes for every filter and the order of the deployment list (docs/api.md, Deployments),
 * so a page costs the same at 100k deployments as at 1k (bench/README.md, list):
 * - `name_contains` is an unanchored ILIKE: a trigram index (pg_trgm) finds the few matching
 *   rows without reading the workspace;
 * - equality filters each get (workspace_id, column, created_at DESC, id DESC), so a rare
 *   value is found directly and a common one is read already in page order;
 * - `remote_reconciled` splits on listener_id: one partial index per side.
 * The old (workspace_id, status) index is covered by the new status index.
 */
export class ListIndexes1764400000000 implements MigrationInterface {
  name = 'ListIndexes1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await q.query(`CREATE INDEX deployments_name_trgm_idx ON deployments USING gin (name gin_trgm_ops)`);
    await q.query(`DROP INDEX deployments_workspace_status_idx`);
    for (const column of ['status', 'deployment_type', 'image_version']) {
      await q.query(
        `CREATE INDEX deployments_workspace_${column}_created_idx ON deployments (workspace_id, ${column}, created_at DESC, id DESC)`,
      );
    }
    await q.query(
      `CREATE INDEX deployments_workspace_remote_created_idx ON deployments (workspace_id, created_at DESC, ` +
        `id DESC) WHERE listener_id IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX deployments_workspace_local_created_idx ON deployments (workspace_id, created_at DESC, ` +
        `id DESC) WHERE listener_id IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX deployments_workspace_local_created_idx`);
    await q.query(`DROP INDEX deployments_workspace_remote_created_idx`);
    for (const column of ['status', 'deployment_type', 'image_version'])
      await q.query(`DROP INDEX deployments_workspace_${column}_created_idx`);
    await q.query(`CREATE INDEX deployments_workspace_status_idx ON deployments (workspace_id, status)`);
    await q.query(`DROP INDEX deployments_name_trgm_idx`);
  }
}
