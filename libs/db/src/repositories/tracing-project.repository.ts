import type { EntityManager } from 'typeorm';

/** Tracing projects: named per workspace, attached to at most one deployment, surviving its deletion. */
export class TracingProjectRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Deletes the project (detach it from its deployment first: `DeploymentRepository.detachTracingProject`). */
  async delete(id: string): Promise<void> {
    await this.manager.query(`DELETE FROM tracing_projects WHERE id = $1`, [id]);
  }
}
