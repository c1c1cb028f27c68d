import type { EntityManager } from 'typeorm';
import type { PreviewRecord } from '../entities/deployment.entity.js';
import { queryRows } from '../sql.js';

/** A preview of a parent, as its life cycle needs it. */
export interface PreviewRow {
  id: string;
  name: string;
  number: number;
  lastActivityAt: Date;
}

/**
 * The previews of a parent deployment (docs/api.md, Previews): preview rows are deployments with
 * `preview_of` set (migration 1765000000400); these are their named reads and writes.
 */
export class PreviewRepository {
  constructor(private readonly manager: EntityManager) {}

  /** The parent's previews not being deleted, least recently active first. */
  async active(parentId: string): Promise<PreviewRow[]> {
    const rows = await queryRows<{ id: string; name: string; number: number; last_activity_at: Date }>(
      this.manager,
      `SELECT id, name, (preview->'pull_request'->>'number')::int AS number, last_activity_at
         FROM deployments WHERE preview_of = $1 AND status <> 'AWAITING_DELETE'
        ORDER BY last_activity_at, created_at`,
      [parentId],
    );
    return rows.map((r) => ({ id: r.id, name: r.name, number: Number(r.number), lastActivityAt: r.last_activity_at }));
  }

  /** The parent's preview of pull request `number` (being deleted or not), or null. */
  async byNumber(parentId: string, number: number): Promise<{ id: string; deleting: boolean } | null> {
    const [row] = await queryRows<{ id: string; status: string }>(
      this.manager,
      `SELECT id, status FROM deployments WHERE preview_of = $1 AND (preview->'pull_request'->>'number')::int = $2`,
      [parentId, number],
    );
    return row ? { id: row.id, deleting: row.status === 'AWAITING_DELETE' } : null;
  }

  /** The number after the highest the parent's previews used. */
  async nextNumber(parentId: string): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      this.manager,
      `SELECT coalesce(max((preview->'pull_request'->>'number')::int), 0) + 1 AS n FROM deployments WHERE preview_of = $1`,
      [parentId],
    );
    return Number(row!.n);
  }

  /** Makes `id` the parent's preview of this pull request, expiring `ttlHours` from now (a rollout extends it). */
  async mark(id: string, parentId: string, record: PreviewRecord, ttlHours: number): Promise<void> {
    await this.manager.query(`UPDATE deployments SET preview_of = $2, preview = $3, preview_expires_at = now() + make_interval(hours => $4) WHERE id = $1`, [
      id,
      parentId,
      JSON.stringify(record),
      ttlHours,
    ]);
  }

  /**
   * Records why a preview's delete starts (for its `preview.deleted` event; nothing for a
   * deployment that is no preview); false when its delete started already.
   */
  async markEnding(id: string, reason: string): Promise<boolean> {
    const rows = await queryRows(
      this.manager,
      `UPDATE deployments SET preview_end_reason = CASE WHEN preview_of IS NULL THEN NULL ELSE $2 END
        WHERE id = $1 AND status <> 'AWAITING_DELETE' RETURNING id`,
      [id, reason],
    );
    return rows.length > 0;
  }

  /** The parent's previews not being deleted, locked (the parent's delete takes them along). */
  async lockActiveIds(parentId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(this.manager, `SELECT id FROM deployments WHERE preview_of = $1 AND status <> 'AWAITING_DELETE' ORDER BY id FOR UPDATE`, [parentId]);
    return rows.map((r) => r.id);
  }

  /** Previews past their expiry whose delete has not started, soonest expired first. */
  async expired(limit = 100): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM deployments WHERE preview_of IS NOT NULL AND status <> 'AWAITING_DELETE' AND preview_expires_at < now() ORDER BY preview_expires_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  /** Locks the preview if it is still past its expiry (a rollout may have extended it since it was listed). */
  async lockIfExpired(id: string): Promise<boolean> {
    return (await queryRows(this.manager, `SELECT 1 FROM deployments WHERE id = $1 AND preview_expires_at < now() FOR UPDATE`, [id])).length > 0;
  }

  /** Whether a deployment of this name exists in the workspace. */
  async nameTaken(workspaceId: string, name: string): Promise<boolean> {
    return (await queryRows(this.manager, `SELECT 1 FROM deployments WHERE workspace_id = $1 AND name = $2`, [workspaceId, name])).length > 0;
  }
}
