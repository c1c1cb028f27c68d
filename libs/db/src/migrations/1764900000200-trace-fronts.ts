import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Zero-configuration tracing (docs/tracing.md, Tracing a deployment):
 *
 * - `deployment_credentials.trace_front_port`: the recorded port of the deployment's trace front,
 *   beside its Postgres and Redis fronts' (unique across deployments, like theirs).
 * - `tracing_pending_updates.project_id`: the project a held update was written for when its writer
 *   could write to one project only (a trace front); NULL for workspace keys. A create absorbs a
 *   held update only from its own project or from a workspace key.
 */
export class TraceFronts1764900000200 implements MigrationInterface {
  name = 'TraceFronts1764900000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE deployment_credentials ADD COLUMN trace_front_port integer CONSTRAINT ` +
        `deployment_credentials_trace_front_port_key UNIQUE`,
    );
    await q.query(
      `ALTER TABLE tracing_pending_updates ADD COLUMN project_id uuid REFERENCES tracing_projects(id) ON DELETE CASCADE`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tracing_pending_updates DROP COLUMN project_id`);
    await q.query(`ALTER TABLE deployment_credentials DROP COLUMN trace_front_port`);
  }
}
