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
    const rows: Array<{ id: string }> = await this.manager.query(
      `SELECT id FROM listeners WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2`,
      [workspaceId, limit],
    );
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
}
