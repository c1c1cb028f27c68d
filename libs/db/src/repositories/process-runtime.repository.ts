import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** What supervision needs of a deployment: whether it is being deleted, what should run, where it serves. */
export interface ServingState {
  status: string;
  activeRevisionId: string | null;
  servingPort: number | null;
}

/**
 * The deployer's reads of the deployments its process runtime runs on this machine (those with
 * no listener), beside its own `runtime_processes` rows. No locks: the deployer reads them
 * again on every pass.
 */
export class ProcessRuntimeRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Deployments not being deleted with a serving proxy or an instance not yet exited: what a supervision pass visits. */
  async supervised(): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT d.id FROM deployments d
        WHERE d.listener_id IS NULL AND d.status <> 'AWAITING_DELETE'
          AND (d.serving_port IS NOT NULL OR EXISTS (SELECT 1 FROM runtime_processes p ` +
        `WHERE p.deployment_id = d.id AND p.status <> 'exited'))`,
    );
    return rows.map((r) => r.id);
  }

  /** Deployments not being deleted with an instance not yet exited: those whose data-access fronts stay open. */
  async withLiveInstances(): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT DISTINCT d.id FROM deployments d JOIN runtime_processes p ON p.deployment_id = d.id
          WHERE d.listener_id IS NULL AND d.status <> 'AWAITING_DELETE' AND p.status <> 'exited'`,
    );
    return rows.map((r) => r.id);
  }

  /** The deployment's status, active revision and serving port, or null when it is gone. */
  async servingState(deploymentId: string): Promise<ServingState | null> {
    const [row] = await queryRows<{ status: string; active_revision_id: string | null; serving_port: number | null }>(
      this.manager,
      `SELECT status, active_revision_id, serving_port FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    return row ? { status: row.status, activeRevisionId: row.active_revision_id, servingPort: row.serving_port } : null;
  }

  /** The revision the deployment serves; null when none, or it is gone or being deleted. */
  async activeRevisionOf(deploymentId: string): Promise<string | null> {
    const [row] = await queryRows<{ active_revision_id: string | null }>(
      this.manager,
      `SELECT active_revision_id FROM deployments WHERE id = $1 AND status <> 'AWAITING_DELETE'`,
      [deploymentId],
    );
    return row?.active_revision_id ?? null;
  }
}
