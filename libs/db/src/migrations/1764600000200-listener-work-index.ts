import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An agent's poll looks for its listener's deployments in a few statuses (UNKNOWN, to bring back;
 * AWAITING_DELETE, to remove). By listener alone, that read every deployment the listener runs,
 * on every poll of every agent: a cost growing with the cluster, not with its pending work. By
 * (listener, status) it reads the matching rows only; it still serves the listener's foreign key.
 */
export class ListenerWorkIndex1764600000200 implements MigrationInterface {
  name = 'ListenerWorkIndex1764600000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX deployments_listener_status_idx ON deployments (listener_id, status) WHERE listener_id IS NOT NULL`,
    );
    await q.query(`DROP INDEX deployments_listener_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX deployments_listener_idx ON deployments (listener_id) WHERE listener_id IS NOT NULL`);
    await q.query(`DROP INDEX deployments_listener_status_idx`);
  }
}
