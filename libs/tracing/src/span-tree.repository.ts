import type { EntityManager } from 'typeorm';

/**
 * Joins the pieces of a trace whose spans arrived apart (OTLP, docs/tracing.md). A piece is a
 * provisional root: a run whose parent is not stored yet, written with its own id as trace id
 * and a dotted order starting at itself; every run below it shares that trace id. Attaching
 * moves the whole piece under its parent in one UPDATE: the parent's trace id, the parent's
 * dotted order before each run's own.
 */
export class SpanTreeRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Where a stored run sits: its project, trace, dotted order and parent (null: not stored). */
  async placeOf(
    workspaceId: string,
    id: string,
  ): Promise<{ project_id: string; trace_id: string; dotted_order: string; parent_run_id: string | null } | null> {
    const [row] = await this.manager.query(
      `SELECT project_id, trace_id, dotted_order, parent_run_id FROM tracing_runs WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
    );
    return row ?? null;
  }

  /** The provisional roots of project `projectId` waiting for `parentId` (pieces never join across projects). */
  async waitingFor(workspaceId: string, parentId: string, projectId: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.manager.query(
      `SELECT id FROM tracing_runs WHERE workspace_id = $1 AND parent_run_id = $2 AND trace_id = id AND project_id = $3`,
      [workspaceId, parentId, projectId],
    );
    return rows.map((r) => r.id);
  }

  /** The length of the longest dotted order in the piece rooted at `rootId` (what attaching it lengthens). */
  async longestDottedOrder(workspaceId: string, rootId: string): Promise<number> {
    const [row] = await this.manager.query(
      `SELECT COALESCE(max(length(dotted_order)), 0) AS longest FROM tracing_runs WHERE workspace_id = $1 AND trace_id = $2`,
      [workspaceId, rootId],
    );
    return Number(row.longest);
  }

  /** Moves the piece rooted at `rootId` under a parent placed at (`traceId`, `parentDotted`); drops the piece's summary row. */
  async attach(workspaceId: string, rootId: string, traceId: string, parentDotted: string): Promise<void> {
    await this.manager.query(
      `UPDATE tracing_runs SET trace_id = $3, dotted_order = $4 || '.' || dotted_order WHERE workspace_id = $1 AND trace_id = $2`,
      [workspaceId, rootId, traceId, parentDotted],
    );
    await this.manager.query(`DELETE FROM tracing_traces WHERE workspace_id = $1 AND trace_id = $2`, [
      workspaceId,
      rootId,
    ]);
  }
}
