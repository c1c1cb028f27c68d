import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each runtime process is: an API instance (`api`: serves, receives traffic) or a queue
 * worker (`queue`: runs an agent server's graphs, receives no traffic), so a deployer that
 * re-adopts it knows which.
 */
export class QueueWorkers1764800000400 implements MigrationInterface {
  name = 'QueueWorkers1764800000400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE runtime_processes ADD COLUMN role text NOT NULL DEFAULT 'api' CHECK (role IN ('api', 'queue'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runtime_processes DROP COLUMN role`);
  }
}
