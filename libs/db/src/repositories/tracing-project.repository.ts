import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** Tracing projects: named per workspace, attached to at most one deployment, surviving its deletion. */
export class TracingProjectRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * Inserts the project unless the workspace has one of that name: true when inserted. A
   * concurrent insert of the same name makes this wait for its commit, then insert nothing.
   */
  async insertIfNameFree(id: string, workspaceId: string, name: string): Promise<boolean> {
    const inserted = await queryRows(
      this.manager,
      `INSERT INTO tracing_projects (id, workspace_id, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id`,
      [id, workspaceId, name],
    );
    return inserted.length > 0;
  }

  /** The workspace's project of that name, locked FOR UPDATE for the rest of the transaction, with the deployment it is attached to; null when none. */
  async lockByName(workspaceId: string, name: string): Promise<{ id: string; deploymentId: string | null } | null> {
    const [row] = await queryRows<{ id: string; deployment_id: string | null }>(
      this.manager,
      `SELECT id, deployment_id FROM tracing_projects WHERE workspace_id = $1 AND name = $2 FOR UPDATE`,
      [workspaceId, name],
    );
    return row ? { id: row.id, deploymentId: row.deployment_id } : null;
  }

  /** Deletes the project (detach it from its deployment first: `DeploymentRepository.detachTracingProject`). */
  async delete(id: string): Promise<void> {
    await this.manager.query(`DELETE FROM tracing_projects WHERE id = $1`, [id]);
  }
}
