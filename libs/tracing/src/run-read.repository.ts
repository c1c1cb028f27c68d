import type { EntityManager } from 'typeorm';
import type { RunPayload, RunRow } from './promote.js';
import { PAYLOAD_COLUMNS } from './run.repository.js';

/** A stored run: its row and (when asked for) its large fields. */
export interface StoredRun extends RunRow {
  received_at: string;
  updated_at: string;
  payload?: RunPayload;
}

/** What `query` selects runs by. Ids and names are already resolved to this workspace. */
export interface RunQuery {
  projectIds?: string[] | null;
  ids?: string[] | null;
  traceId?: string | null;
  parentRunId?: string | null;
  isRoot?: boolean | null;
  runType?: string | null;
  error?: boolean | null;
  startTime?: string | null;
  endTime?: string | null;
  /** A compiled condition and its parameters (filter.ts), numbered after this query's own. */
  filter?: ((params: unknown[]) => string) | null;
  /** Only runs of traces whose root matches this compiled condition. */
  traceFilter?: ((params: unknown[]) => string) | null;
  /** Only runs of traces holding at least one run that matches this compiled condition. */
  treeFilter?: ((params: unknown[]) => string) | null;
  /** Tokens read with the run's descendants' (TREE_TOKENS; the default), or the run's own. */
  subtreeTokens?: boolean;
  /** Keyset paging: the page starts after this run (by start time and id, or by dotted order in tree order). */
  after?: RunPosition | null;
  order: 'asc' | 'desc';
  /** Runs of one trace come in tree order (dotted order, byte-wise) instead of by start time. */
  treeOrder: boolean;
  withPayload: boolean;
  offset: number;
  limit: number;
}

/** Where a page ended: the last run's start time and id, or its dotted order when runs come in tree order. */
export type RunPosition = { startTime: string; id: string } | { dottedOrder: string };

/**
 * The tokens a run is read with, as LangSmith reads them: its own and its descendants' (a chain's
 * tokens are its model calls'). A root takes its trace's summary sums (one row); any other run
 * sums the runs under it, a range of the trace index (`dotted_order` below its own, in byte
 * order). Null where neither it nor anything under it counted tokens. Filters compare a run's own.
 */
const TREE_TOKENS = {
  joins:
    `LEFT JOIN tracing_traces tt ON r.parent_run_id IS NULL AND tt.workspace_id = r.workspace_id AND ` +
    `tt.trace_id = r.trace_id AND tt.root_run_id = r.id
         LEFT JOIN LATERAL (
           SELECT sum(c.prompt_tokens) AS prompt, sum(c.completion_tokens) AS completion, sum(c.total_tokens) AS total
             FROM tracing_runs c
            WHERE r.parent_run_id IS NOT NULL AND c.workspace_id = r.workspace_id AND c.trace_id = r.trace_id
              AND c.dotted_order > r.dotted_order || '.' AND c.dotted_order < r.dotted_order || '/'
         ) below ON true`,
  columns: ['prompt', 'completion', 'total']
    .map(
      (
        k,
      ) => `CASE WHEN tt.trace_id IS NOT NULL AND tt.run_count > 1 AND (r.${k}_tokens IS NOT NULL OR tt.${k}_tokens > 0) THEN tt.${k}_tokens
              WHEN below.${k} IS NOT NULL THEN COALESCE(r.${k}_tokens, 0) + below.${k}
              ELSE r.${k}_tokens END AS tree_${k}_tokens`,
    )
    .join(', '),
};

/**
 * The reads of the runs store (`tracing_runs`, `tracing_run_payloads`, and `tracing_traces` for a
 * root's tree tokens): one run, a page of runs, children's ids. The writes are RunRepository's.
 */
export class RunReadRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * One run of the workspace with its large fields, its children's ids and its tree's tokens
   * (TREE_TOKENS, unless `subtreeTokens` is false), or null. With `projectId`, only a run of that project.
   */
  async get(
    workspaceId: string,
    id: string,
    options: { projectId?: string; subtreeTokens?: boolean } = {},
  ): Promise<(StoredRun & { child_run_ids: string[] }) | null> {
    const tree = options.subtreeTokens !== false;
    const [row] = await this.manager.query(
      `SELECT r.*, p.inputs, p.outputs, p.events, p.serialized, p.extra${tree ? `, ${TREE_TOKENS.columns}` : ''},
              ARRAY(SELECT c.id FROM tracing_runs c WHERE c.workspace_id = r.workspace_id AND c.parent_run_id = ` +
        // A child is of the run's own trace (and so project): any writer may name any parent_run_id.
        `r.id AND c.trace_id = r.trace_id AND c.project_id = r.project_id ORDER BY c.dotted_order) AS child_run_ids
         FROM tracing_runs r
         LEFT JOIN tracing_run_payloads p ON p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.start_time = r.start_time
         ${tree ? TREE_TOKENS.joins : ''}
        WHERE r.workspace_id = $1 AND r.id = $2${options.projectId ? ' AND r.project_id = $3' : ''}`,
      options.projectId ? [workspaceId, id, options.projectId] : [workspaceId, id],
    );
    return row ? { ...toStored(row, true), child_run_ids: row.child_run_ids } : null;
  }

  /** A page of the workspace's runs matching `q`; one more than `limit` tells the caller a next page exists. */
  async query(workspaceId: string, q: RunQuery): Promise<StoredRun[]> {
    const params: unknown[] = [workspaceId];
    const where = ['r.workspace_id = $1'];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    // One project as `=`: Postgres reads the (project, start_time) index in order and stops at the
    // page; `= ANY(array)` makes it find and sort every run of the project first.
    if (q.projectIds?.length === 1) where.push(`r.project_id = ${p(q.projectIds[0])}::uuid`);
    else if (q.projectIds) where.push(`r.project_id = ANY(${p(q.projectIds)}::uuid[])`);
    if (q.ids) where.push(`r.id = ANY(${p(q.ids)}::uuid[])`);
    if (q.traceId) where.push(`r.trace_id = ${p(q.traceId)}`);
    if (q.parentRunId) where.push(`r.parent_run_id = ${p(q.parentRunId)}`);
    if (q.isRoot === true) where.push('r.parent_run_id IS NULL');
    if (q.isRoot === false) where.push('r.parent_run_id IS NOT NULL');
    if (q.runType) where.push(`r.run_type = ${p(q.runType)}`);
    if (q.error === true) where.push(`r.status = 'error'`);
    if (q.error === false) where.push(`r.status <> 'error'`);
    if (q.startTime) where.push(`r.start_time >= ${p(q.startTime)}::timestamptz`);
    if (q.endTime) where.push(`r.start_time <= ${p(q.endTime)}::timestamptz`);
    if (q.filter) where.push(q.filter(params));
    // The trace and tree filters read other runs of the same traces: an uncorrelated subquery
    // whose own `r` (the alias compiled filters name) is the candidate root or tree member.
    const traces = (condition: string) =>
      `r.trace_id IN (SELECT r.trace_id FROM tracing_runs r WHERE r.workspace_id = $1${
        q.projectIds ? ` AND r.project_id = ANY(${p(q.projectIds)}::uuid[])` : ''
      } AND ${condition})`;
    if (q.traceFilter) where.push(traces(`r.parent_run_id IS NULL AND ${q.traceFilter(params)}`));
    if (q.treeFilter) where.push(traces(q.treeFilter(params)));
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    const cmp = q.order === 'asc' ? '>' : '<';
    if (q.after && 'dottedOrder' in q.after) where.push(`r.dotted_order ${cmp} ${p(q.after.dottedOrder)}`);
    else if (q.after)
      where.push(`(r.start_time, r.id) ${cmp} (${p(q.after.startTime)}::timestamptz, ${p(q.after.id)}::uuid)`);
    const order = q.treeOrder ? `r.dotted_order ${dir}` : `r.start_time ${dir}, r.id ${dir}`;
    const tree = q.subtreeTokens !== false;
    const payloads = q.withPayload
      ? 'LEFT JOIN tracing_run_payloads p ON p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.start_time = r.start_time'
      : '';
    const rows = await this.manager.query(
      `SELECT r.*${q.withPayload ? ', p.inputs, p.outputs, p.events, p.serialized, p.extra' : ''}${tree ? `, ${TREE_TOKENS.columns}` : ''}
         FROM tracing_runs r
         ${payloads}
         ${tree ? TREE_TOKENS.joins : ''}
        WHERE ${where.join(' AND ')}
        ORDER BY ${order}
        OFFSET ${p(q.offset)} LIMIT ${p(q.limit + 1)}`,
      params,
    );
    return rows.map((row: Record<string, any>) => toStored(row, q.withPayload));
  }

  /** The ids of the children of these runs, by parent. */
  async childIds(workspaceId: string, parentIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (!parentIds.length) return out;
    const rows = await this.manager.query(
      `SELECT parent_run_id, array_agg(id ORDER BY dotted_order) AS ids FROM tracing_runs
        WHERE workspace_id = $1 AND parent_run_id = ANY($2::uuid[]) GROUP BY parent_run_id`,
      [workspaceId, parentIds],
    );
    for (const r of rows) out.set(r.parent_run_id, r.ids);
    return out;
  }
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v as string | null));
const num = (v: unknown) => (v == null ? null : Number(v));

function toStored(row: Record<string, any>, withPayload: boolean): StoredRun {
  const stored: StoredRun = {
    ...(row as RunRow),
    start_time: iso(row.start_time)!,
    end_time: iso(row.end_time),
    first_token_time: iso(row.first_token_time),
    prompt_tokens: num(row.tree_prompt_tokens ?? row.prompt_tokens),
    completion_tokens: num(row.tree_completion_tokens ?? row.completion_tokens),
    total_tokens: num(row.tree_total_tokens ?? row.total_tokens),
    received_at: iso(row.received_at)!,
    updated_at: iso(row.updated_at)!,
  };
  for (const c of PAYLOAD_COLUMNS) delete (stored as any)[c];
  delete (stored as any).child_run_ids;
  for (const c of ['tree_prompt_tokens', 'tree_completion_tokens', 'tree_total_tokens']) delete (stored as any)[c];
  if (withPayload) stored.payload = Object.fromEntries(PAYLOAD_COLUMNS.map((c) => [c, row[c] ?? null]));
  return stored;
}
