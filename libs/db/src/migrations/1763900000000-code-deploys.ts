import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Code deploys: repository-host integrations and their webhook deliveries, per-revision log
 * lines (build and deploy), uploaded source tarballs, and the local processes the process
 * runtime runs (so a restarted deployer can re-adopt them).
 */
export class CodeDeploys1763900000000 implements MigrationInterface {
  name = 'CodeDeploys1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE integrations (
        id                     uuid PRIMARY KEY,
        workspace_id           uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        provider               text NOT NULL CHECK (provider IN ('local', 'github', 'gitea')),
        name                   text NOT NULL,
        config                 jsonb NOT NULL DEFAULT '{}'::jsonb,
        credentials_sealed     text,
        webhook_secret_sealed  text,
        created_at             timestamptz NOT NULL DEFAULT now(),
        updated_at             timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT integrations_workspace_name_key UNIQUE (workspace_id, name)
      )`);
    await q.query(
      `ALTER TABLE deployments ADD COLUMN integration_id uuid REFERENCES integrations(id) ON DELETE RESTRICT`,
    );
    await q.query(
      `CREATE INDEX deployments_integration_idx ON deployments (integration_id) WHERE integration_id IS NOT NULL`,
    );

    await q.query(`
      CREATE TABLE webhook_deliveries (
        id               uuid PRIMARY KEY,
        integration_id   uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
        delivery_id      text,
        event            text,
        ref              text,
        signature_valid  boolean NOT NULL,
        status_code      integer NOT NULL,
        outcome          text NOT NULL,
        revision_ids     uuid[] NOT NULL DEFAULT '{}',
        received_at      timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX webhook_deliveries_integration_idx ON webhook_deliveries (integration_id, received_at DESC, id DESC)`,
    );

    await q.query(`
      CREATE TABLE revision_logs (
        id           bigserial PRIMARY KEY,
        revision_id  uuid NOT NULL REFERENCES revisions(id) ON DELETE CASCADE,
        type         text NOT NULL CHECK (type IN ('build', 'deploy')),
        level        text NOT NULL DEFAULT 'info',
        message      text NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX revision_logs_revision_idx ON revision_logs (revision_id, type, id)`);

    await q.query(`
      CREATE TABLE uploads (
        object_path    text PRIMARY KEY,
        deployment_id  uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        size_bytes     bigint,
        sha256         text,
        created_at     timestamptz NOT NULL DEFAULT now(),
        completed_at   timestamptz
      )`);

    await q.query(`
      CREATE TABLE runtime_processes (
        id             uuid PRIMARY KEY,
        deployment_id  uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        revision_id    uuid NOT NULL REFERENCES revisions(id) ON DELETE CASCADE,
        pid            integer,
        port           integer NOT NULL,
        status         text NOT NULL CHECK (status IN ('starting', 'running', 'stopping', 'exited')),
        log_path       text NOT NULL,
        started_at     timestamptz NOT NULL DEFAULT now(),
        updated_at     timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX runtime_processes_deployment_idx ON runtime_processes (deployment_id, status)`);
    // The stable serving address of a cloud-hosted deployment (the deployer's proxy port).
    await q.query(`ALTER TABLE deployments ADD COLUMN serving_port integer`);
    await q.query(
      `CREATE UNIQUE INDEX deployments_serving_port_idx ON deployments (serving_port) WHERE serving_port IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX deployments_serving_port_idx`);
    await q.query(`ALTER TABLE deployments DROP COLUMN serving_port`);
    await q.query(`DROP TABLE runtime_processes`);
    await q.query(`DROP TABLE uploads`);
    await q.query(`DROP TABLE revision_logs`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`ALTER TABLE deployments DROP COLUMN integration_id`);
    await q.query(`DROP TABLE integrations`);
  }
}
