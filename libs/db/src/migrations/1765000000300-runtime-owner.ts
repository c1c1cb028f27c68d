import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where the deployer that owns the process runtime can be reached (docs/operations.md, The
 * edge): one row, written by the deployer each time it takes the runtime lock, read by every
 * edge replica as the host of the deployments' serving proxies. Announced on
 * `slipway_edge_routes` (payload `owner`), so the edges follow a takeover without a restart.
 */
export class RuntimeOwner1765000000300 implements MigrationInterface {
  name = 'RuntimeOwner1765000000300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE runtime_owner (
        id         smallint PRIMARY KEY CHECK (id = 1),
        address    text NOT NULL,
        since      timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE runtime_owner`);
  }
}
