import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The built-in image registry (docs/api.md, Images and the built-in registry): `internal_docker`
 * deployments, the digest an image revision runs, push tokens (only their SHA-256 is kept, so a
 * leaked database holds no usable token; revoked when the deployment is deleted), and the blobs
 * pushed per workspace, which the `registry_bytes` quota counts.
 */
export class Registry1764700000000 implements MigrationInterface {
  name = 'Registry1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deployments DROP CONSTRAINT deployments_source_check`);
    await q.query(
      `ALTER TABLE deployments ADD CONSTRAINT deployments_source_check CHECK (source IN ('repohost', ` +
        `'external_container', 'upload', 'internal_docker'))`,
    );
    await q.query(`ALTER TABLE revisions ADD COLUMN image_digest text CHECK (image_digest ~ '^sha256:[0-9a-f]{64}$')`);
    await q.query(`ALTER TABLE workspace_quotas ADD COLUMN registry_bytes bigint CHECK (registry_bytes >= 0)`);
    await q.query(`
      CREATE TABLE registry_push_tokens (
        id            uuid PRIMARY KEY,
        deployment_id uuid NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
        token_hash    bytea NOT NULL UNIQUE,
        expires_at    timestamptz NOT NULL,
        revoked_at    timestamptz,
        created_at    timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX registry_push_tokens_deployment_idx ON registry_push_tokens (deployment_id)`);
    await q.query(`
      CREATE TABLE registry_blobs (
        repository    text NOT NULL,
        digest        text NOT NULL,
        deployment_id uuid NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
        workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
        created_at    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (repository, digest)
      )`);
    await q.query(`CREATE INDEX registry_blobs_workspace_idx ON registry_blobs (workspace_id, digest)`);
    await q.query(`CREATE INDEX registry_blobs_deployment_idx ON registry_blobs (deployment_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE registry_blobs`);
    await q.query(`DROP TABLE registry_push_tokens`);
    await q.query(`ALTER TABLE workspace_quotas DROP COLUMN registry_bytes`);
    await q.query(`ALTER TABLE revisions DROP COLUMN image_digest`);
    await q.query(`ALTER TABLE deployments DROP CONSTRAINT deployments_source_check`);
    await q.query(
      `ALTER TABLE deployments ADD CONSTRAINT deployments_source_check CHECK (source IN ('repohost', 'external_container', 'upload'))`,
    );
  }
}
