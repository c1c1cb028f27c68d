import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The deployment quota as slots (libs/db/src/repositories/deployment-slots.repository.ts): a create
 * claims a free slot row of its workspace with `FOR UPDATE SKIP LOCKED`, so creates of one
 * workspace no longer queue on the workspace row's lock. A slot is taken by one deployment and
 * goes with it (ON DELETE CASCADE, whatever deletes the deployment); free slots are laid out for
 * the quota recorded in `workspaces.deployment_slots_for`, and laid out again, under the
 * workspace lock, when that no longer matches the quota in force or none is free. Every existing
 * deployment takes a slot; no workspace has free ones yet (its next create lays them out).
 */
export class DeploymentSlots1764800000000 implements MigrationInterface {
  name = 'DeploymentSlots1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE workspaces ADD COLUMN deployment_slots_for integer`);
    await q.query(`
      CREATE TABLE deployment_slots (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        workspace_id   uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        deployment_id  uuid UNIQUE REFERENCES deployments(id) ON DELETE CASCADE
      )`);
    await q.query(
      `CREATE INDEX deployment_slots_free_idx ON deployment_slots (workspace_id) WHERE deployment_id IS NULL`,
    );
    await q.query(`CREATE INDEX deployment_slots_workspace_idx ON deployment_slots (workspace_id)`);
    await q.query(
      `INSERT INTO deployment_slots (workspace_id, deployment_id) SELECT workspace_id, id FROM deployments`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE deployment_slots`);
    await q.query(`ALTER TABLE workspaces DROP COLUMN deployment_slots_for`);
  }
}
