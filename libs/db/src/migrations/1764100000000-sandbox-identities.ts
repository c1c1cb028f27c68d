import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The sandbox uid/gid of each cloud-hosted deployment (one per deployment, never shared). */
export class SandboxIdentities1764100000000 implements MigrationInterface {
  name = 'SandboxIdentities1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deployments ADD COLUMN sandbox_uid integer`);
    await q.query(
      `CREATE UNIQUE INDEX deployments_sandbox_uid_idx ON deployments (sandbox_uid) WHERE sandbox_uid IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX deployments_sandbox_uid_idx`);
    await q.query(`ALTER TABLE deployments DROP COLUMN sandbox_uid`);
  }
}
