import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Log lines are read in (timestamp, id) order with time filters (docs/api.md, Logs): per log,
 * and across a workspace. The per-log (revision, type, id) index stays for the tail reads.
 */
export class LogFollow1764500000000 implements MigrationInterface {
  name = 'LogFollow1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX revision_logs_revision_time_idx ON revision_logs (revision_id, type, created_at, id)`);
    await q.query(`CREATE INDEX revision_logs_time_idx ON revision_logs (created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX revision_logs_time_idx`);
    await q.query(`DROP INDEX revision_logs_revision_time_idx`);
  }
}
