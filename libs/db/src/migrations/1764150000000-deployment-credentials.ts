import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A deployment's own store credentials: its Postgres role's and Redis ACL user's passwords,
 * generated once at random and sealed with the secrets key (so rotating the key re-seals them but
 * never changes them), and the loopback ports of its data-access fronts (stable across deployer
 * restarts, so adopted instances keep reaching them). Existing deployments get theirs on first
 * use (see DeploymentCredentialStore).
 */
export class DeploymentCredentials1764150000000 implements MigrationInterface {
  name = 'DeploymentCredentials1764150000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE deployment_credentials (
        deployment_id             uuid PRIMARY KEY REFERENCES deployments(id) ON DELETE CASCADE,
        database_password_sealed  text NOT NULL,
        redis_password_sealed     text NOT NULL,
        postgres_front_port       integer CONSTRAINT deployment_credentials_postgres_front_port_key UNIQUE,
        redis_front_port          integer CONSTRAINT deployment_credentials_redis_front_port_key UNIQUE,
        created_at                timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE deployment_credentials`);
  }
}
