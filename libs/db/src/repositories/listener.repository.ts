import type { EntityManager } from 'typeorm';
import { Listener, type ComputeConfig } from '../entities/index.js';
import type { Page } from './pagination.js';

export const LISTENER_COMPUTE_ID_UNIQUE = 'listeners_workspace_compute_id_key';

export interface ListenerChanges {
  computeConfig?: ComputeConfig;
  version?: string | null;
}

/** Listeners, always addressed within one workspace. */
export class ListenerRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Throws a unique violation on LISTENER_COMPUTE_ID_UNIQUE for a taken (workspace, compute_id). */
  async insert(listener: Listener): Promise<Listener> {
    await this.manager.insert(Listener, listener);
    return (await this.find(listener.workspaceId, listener.id))!;
  }

  find(workspaceId: string, id: string): Promise<Listener | null> {
    return this.manager.findOneBy(Listener, { workspaceId, id });
  }

  /** Ids of every listener of the workspace, oldest first (at most `limit`). */
  async idsOfWorkspace(workspaceId: string, limit = 100): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.manager.query(`SELECT id FROM listeners WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2`, [workspaceId, limit]);
    return rows.map((r) => r.id);
  }

  list(workspaceId: string, { limit, offset }: Page): Promise<Listener[]> {
    return this.manager.find(Listener, {
      where: { workspaceId },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
      skip: offset,
    });
  }

  /** Applies `changes` and returns the updated row, or null when it does not exist. */
  async update(workspaceId: string, id: string, changes: ListenerChanges): Promise<Listener | null> {
    const result = await this.manager
      .createQueryBuilder()
      .update(Listener)
      .set({ ...changes, updatedAt: () => 'now()' })
      .where('id = :id AND workspace_id = :workspaceId', { id, workspaceId })
      .execute();
    return result.affected ? this.find(workspaceId, id) : null;
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    const result = await this.manager.delete(Listener, { workspaceId, id });
    return (result.affected ?? 0) > 0;
  }

  /**
   * An agent's poll: records that the listener was seen and returns what the reconciler marked
   * UNKNOWN while it was away (its deployments, and its rollouts), in one round trip. The seen
   * time is written at most once a second: agents poll often, and a write on every poll made each
   * one wait for the listener's row lock and a WAL flush (silence is judged in minutes).
   */
  async checkIn(id: string): Promise<{ unknownDeployments: Array<{ id: string; databaseName: string | null }>; unknownRevisionIds: string[] }> {
    const rows: Array<{ kind: 'deployment' | 'revision'; id: string; database_name: string | null }> = await this.manager.query(
      `WITH seen AS (UPDATE listeners SET last_seen_at = now() WHERE id = $1 AND (last_seen_at IS NULL OR last_seen_at < now() - interval '1 second'))
       SELECT 'deployment' AS kind, id, database_name FROM deployments WHERE listener_id = $1 AND status = 'UNKNOWN'
       UNION ALL
       SELECT 'revision', r.id, NULL FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE d.listener_id = $1 AND r.status = 'UNKNOWN'`,
      [id],
    );
    return {
      unknownDeployments: rows.filter((r) => r.kind === 'deployment').map((r) => ({ id: r.id, databaseName: r.database_name })),
      unknownRevisionIds: rows.filter((r) => r.kind === 'revision').map((r) => r.id),
    };
  }
}
