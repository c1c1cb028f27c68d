import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deployments, revisions and the write-and-enqueue pipeline: tracing projects, revision status
 * events, the transactional outbox, idempotency keys and tags.
 */
export class DeploymentsPipeline1763800000000 implements MigrationInterface {
  name = 'DeploymentsPipeline1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tracing_projects (
        id             uuid PRIMARY KEY,
        workspace_id   uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name           text NOT NULL,
        deployment_id  uuid,
        created_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT tracing_projects_workspace_name_key UNIQUE (workspace_id, name)
      )`);
    await q.query(`
      CREATE TABLE deployments (
        id                  uuid PRIMARY KEY,
        workspace_id        uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name                text NOT NULL,
        source              text NOT NULL CHECK (source IN ('repohost', 'external_container', 'upload')),
        status              text NOT NULL,
        deployment_type     text CHECK (deployment_type IN ('dev_free', 'dev', 'prod')),
        tracing_project_id  uuid REFERENCES tracing_projects(id) ON DELETE SET NULL,
        listener_id         uuid REFERENCES listeners(id) ON DELETE RESTRICT,
        source_config       jsonb NOT NULL DEFAULT '{}'::jsonb,
        resource_spec       jsonb NOT NULL,
        secrets_sealed      text,
        image_version       text,
        latest_revision_id  uuid,
        active_revision_id  uuid,
        database_name       text,
        status_changed_at   timestamptz NOT NULL DEFAULT now(),
        last_activity_at    timestamptz NOT NULL DEFAULT now(),
        created_at          timestamptz NOT NULL DEFAULT now(),
        updated_at          timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT deployments_workspace_name_key UNIQUE (workspace_id, name)
      )`);
    await q.query(`ALTER TABLE tracing_projects ADD CONSTRAINT tracing_projects_deployment_fk
                   FOREIGN KEY (deployment_id) REFERENCES deployments(id) ON DELETE SET NULL`);
    // The list endpoint: one workspace, newest first, with its filters.
    await q.query(
      `CREATE INDEX deployments_workspace_created_idx ON deployments (workspace_id, created_at DESC, id DESC)`,
    );
    await q.query(`CREATE INDEX deployments_workspace_status_idx ON deployments (workspace_id, status)`);
    await q.query(`CREATE INDEX deployments_listener_idx ON deployments (listener_id) WHERE listener_id IS NOT NULL`);

    await q.query(`
      CREATE TABLE revisions (
        id                      uuid PRIMARY KEY,
        deployment_id           uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        status                  text NOT NULL,
        status_message          text,
        source                  text NOT NULL,
        source_revision_config  jsonb NOT NULL DEFAULT '{}'::jsonb,
        image_uri               text,
        artifact_ref            text,
        resource_spec           jsonb NOT NULL,
        secrets_sealed          text,
        secret_names            text[] NOT NULL DEFAULT '{}',
        build_config            jsonb NOT NULL DEFAULT '{}'::jsonb,
        redeployed_from         uuid REFERENCES revisions(id) ON DELETE SET NULL,
        started_at              timestamptz,
        deadline_at             timestamptz,
        heartbeat_at            timestamptz,
        attempt                 integer NOT NULL DEFAULT 0,
        status_changed_at       timestamptz NOT NULL DEFAULT now(),
        created_at              timestamptz NOT NULL DEFAULT now(),
        updated_at              timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX revisions_deployment_created_idx ON revisions (deployment_id, created_at DESC, id DESC)`,
    );
    // One revision in flight per deployment, enforced by Postgres itself: a started revision
    // holds the slot until it reaches a terminal status.
    await q.query(`
      CREATE UNIQUE INDEX revisions_one_in_flight_idx ON revisions (deployment_id)
       WHERE started_at IS NOT NULL
         AND status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED')`);
    // The reconciler's scan: non-terminal revisions only.
    await q.query(`
      CREATE INDEX revisions_open_idx ON revisions (status, deadline_at)
       WHERE status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED')`);
    await q.query(`ALTER TABLE deployments ADD CONSTRAINT deployments_latest_revision_fk
                   FOREIGN KEY (latest_revision_id) REFERENCES revisions(id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED`);
    await q.query(`ALTER TABLE deployments ADD CONSTRAINT deployments_active_revision_fk
                   FOREIGN KEY (active_revision_id) REFERENCES revisions(id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED`);

    // Every status change, appended in the transaction that made it: history, metrics source.
    await q.query(`
      CREATE TABLE revision_events (
        id              bigserial PRIMARY KEY,
        revision_id     uuid NOT NULL REFERENCES revisions(id) ON DELETE CASCADE,
        deployment_id   uuid NOT NULL,
        from_status     text,
        to_status       text NOT NULL,
        message         text,
        time_in_status_ms bigint,
        created_at      timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX revision_events_revision_idx ON revision_events (revision_id, id)`);

    await q.query(`
      CREATE TABLE outbox (
        id           bigserial PRIMARY KEY,
        queue        text NOT NULL,
        job_name     text NOT NULL,
        job_id       text NOT NULL,
        payload      jsonb NOT NULL,
        delay_ms     integer NOT NULL DEFAULT 0,
        attempts     integer NOT NULL DEFAULT 0,
        last_error   text,
        available_at timestamptz NOT NULL DEFAULT now(),
        created_at   timestamptz NOT NULL DEFAULT now(),
        sent_at      timestamptz
      )`);
    await q.query(`CREATE INDEX outbox_pending_idx ON outbox (available_at, id) WHERE sent_at IS NULL`);

    await q.query(`
      CREATE TABLE idempotency_keys (
        workspace_id     uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        key              text NOT NULL,
        request_hash     text NOT NULL,
        response_status  integer NOT NULL,
        response_body    jsonb,
        created_at       timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, key)
      )`);

    await q.query(`
      CREATE TABLE tag_keys (
        id            uuid PRIMARY KEY,
        workspace_id  uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        key           text NOT NULL,
        description   text NOT NULL DEFAULT '',
        created_at    timestamptz NOT NULL DEFAULT now(),
        updated_at    timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT tag_keys_workspace_key_key UNIQUE (workspace_id, key)
      )`);
    await q.query(`
      CREATE TABLE tag_values (
        id          uuid PRIMARY KEY,
        tag_key_id  uuid NOT NULL REFERENCES tag_keys(id) ON DELETE CASCADE,
        value       text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT tag_values_key_value_key UNIQUE (tag_key_id, value)
      )`);
    await q.query(`
      CREATE TABLE deployment_tag_values (
        deployment_id  uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        tag_value_id   uuid NOT NULL REFERENCES tag_values(id) ON DELETE CASCADE,
        created_at     timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (deployment_id, tag_value_id)
      )`);
    await q.query(
      `CREATE INDEX deployment_tag_values_value_idx ON deployment_tag_values (tag_value_id, deployment_id)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'deployment_tag_values',
      'tag_values',
      'tag_keys',
      'idempotency_keys',
      'outbox',
      'revision_events',
    ]) {
      await q.query(`DROP TABLE ${table}`);
    }
    await q.query(`ALTER TABLE deployments DROP CONSTRAINT deployments_latest_revision_fk`);
    await q.query(`ALTER TABLE deployments DROP CONSTRAINT deployments_active_revision_fk`);
    await q.query(`DROP TABLE revisions`);
    await q.query(`ALTER TABLE tracing_projects DROP CONSTRAINT tracing_projects_deployment_fk`);
    await q.query(`DROP TABLE deployments`);
    await q.query(`DROP TABLE tracing_projects`);
  }
}
