import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Tenancy, API keys, listeners and OAuth providers. */
export class Foundation1763700000000 implements MigrationInterface {
  name = 'Foundation1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE organizations (
        id          uuid PRIMARY KEY,
        name        text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE workspaces (
        id               uuid PRIMARY KEY,
        organization_id  uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        name             text NOT NULL,
        created_at       timestamptz NOT NULL DEFAULT now(),
        updated_at       timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX workspaces_organization_id_idx ON workspaces (organization_id)`);
    await q.query(`
      CREATE TABLE listeners (
        id              uuid PRIMARY KEY,
        workspace_id    uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        compute_type    text NOT NULL,
        compute_id      text NOT NULL CHECK (char_length(compute_id) BETWEEN 1 AND 253),
        compute_config  jsonb NOT NULL DEFAULT '{}'::jsonb,
        version         text,
        last_seen_at    timestamptz,
        created_at      timestamptz NOT NULL DEFAULT now(),
        updated_at      timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT listeners_workspace_compute_id_key UNIQUE (workspace_id, compute_id)
      )`);
    // Serves the list endpoint: one workspace, newest first.
    await q.query(`CREATE INDEX listeners_workspace_created_idx ON listeners (workspace_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE api_keys (
        id               uuid PRIMARY KEY,
        organization_id  uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        workspace_id     uuid REFERENCES workspaces(id) ON DELETE CASCADE,
        listener_id      uuid REFERENCES listeners(id) ON DELETE CASCADE,
        scope            text NOT NULL CHECK (scope IN ('workspace', 'organization')),
        role             text NOT NULL CHECK (role IN ('admin', 'member')),
        description      text NOT NULL DEFAULT '',
        prefix           text NOT NULL,
        key_hash         text NOT NULL,
        created_at       timestamptz NOT NULL DEFAULT now(),
        last_used_at     timestamptz,
        revoked_at       timestamptz,
        CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash),
        CONSTRAINT api_keys_scope_workspace_check CHECK ((scope = 'workspace') = (workspace_id IS NOT NULL)),
        CONSTRAINT api_keys_listener_scope_check CHECK (listener_id IS NULL OR scope = 'workspace')
      )`);
    await q.query(`CREATE INDEX api_keys_organization_created_idx ON api_keys (organization_id, created_at DESC)`);
    await q.query(`
      CREATE TABLE oauth_providers (
        id                     uuid PRIMARY KEY,
        organization_id        uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        provider_id            text NOT NULL,
        name                   text NOT NULL,
        client_id              text NOT NULL,
        client_secret_sealed   text NOT NULL,
        auth_url               text NOT NULL,
        token_url              text NOT NULL,
        uses_pkce              boolean NOT NULL DEFAULT false,
        code_challenge_method  text,
        provider_type          text,
        created_at             timestamptz NOT NULL DEFAULT now(),
        updated_at             timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT oauth_providers_organization_provider_id_key UNIQUE (organization_id, provider_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE oauth_providers`);
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE listeners`);
    await q.query(`DROP TABLE workspaces`);
    await q.query(`DROP TABLE organizations`);
  }
}
