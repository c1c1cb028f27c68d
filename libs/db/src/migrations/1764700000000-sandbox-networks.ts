import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The network namespace of each sandbox (a build, an app instance): its address in the pool
 * (SLIPWAY_SANDBOX_SUBNET) and who holds it, unique both ways so builders and deployers never
 * collide; and the address an instance is reached at.
 */
export class SandboxNetworks1764700000000 implements MigrationInterface {
  name = 'SandboxNetworks1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE sandbox_networks (
      address inet PRIMARY KEY,
      owner text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`ALTER TABLE runtime_processes ADD COLUMN address text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runtime_processes DROP COLUMN address`);
    await q.query(`DROP TABLE sandbox_networks`);
  }
}
