import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tracing retention and the deployment's trace list (issue 34):
 *
 * - `workspace_quotas.trace_retention_days`: a workspace's override of `SLIPWAY_TRACE_RETENTION_DAYS`
 *   (NULL = the default), read by the retention pass.
 * - `tracing_traces` gets the indexes the retention pass deletes by (`start_time`) and the
 *   summary fields the deployment's trace list shows: `thread_id` and `revision_id` (the root's,
 *   else the first run's in tree order that has one), backfilled from the runs already stored.
 * - `tracing_pending_updates (received_at)`: held updates older than the window are dropped.
 */
export class TracingRetention1764900000100 implements MigrationInterface {
  name = 'TracingRetention1764900000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE workspace_quotas ADD COLUMN trace_retention_days integer CHECK (trace_retention_days >= 1)`,
    );
    await q.query(`ALTER TABLE tracing_traces ADD COLUMN thread_id text, ADD COLUMN revision_id text`);
    await q.query(`
      UPDATE tracing_traces t SET thread_id = s.thread_id, revision_id = s.revision_id
        FROM (SELECT workspace_id, trace_id,
                     (array_agg(thread_id ORDER BY dotted_order) FILTER (WHERE thread_id IS NOT NULL))[1] AS thread_id,
                     (array_agg(revision_id ORDER BY dotted_order) FILTER (WHERE revision_id IS NOT NULL))[1] AS revision_id
                FROM tracing_runs GROUP BY workspace_id, trace_id) s
       WHERE s.workspace_id = t.workspace_id AND s.trace_id = t.trace_id`);
    await q.query(`CREATE INDEX tracing_traces_start_idx ON tracing_traces (start_time)`);
    await q.query(`CREATE INDEX tracing_pending_updates_received_idx ON tracing_pending_updates (received_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX tracing_pending_updates_received_idx`);
    await q.query(`DROP INDEX tracing_traces_start_idx`);
    await q.query(`ALTER TABLE tracing_traces DROP COLUMN revision_id, DROP COLUMN thread_id`);
    await q.query(`ALTER TABLE workspace_quotas DROP COLUMN trace_retention_days`);
  }
}
