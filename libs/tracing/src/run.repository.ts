import type { EntityManager } from 'typeorm';
import type { RunPayload, RunRow } from './promote.js';
import type { RunFields } from './run-ops.js';

/** Columns of `tracing_runs`, in insert order. */
const RUN_COLUMNS = [
  'workspace_id',
  'id',
  'start_time',
  'project_id',
  'trace_id',
  'parent_run_id',
  'dotted_order',
  'run_type',
  'name',
  'status',
  'error',
  'end_time',
  'first_token_time',
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'model',
  'thread_id',
  'revision_id',
  'run_id',
  'assistant_id',
  'checkpoint_id',
  'reference_example_id',
  'tags',
  'metadata',
  'truncated_fields',
] as const satisfies ReadonlyArray<keyof RunRow>;

const PAYLOAD_COLUMNS = ['inputs', 'outputs', 'events', 'serialized', 'extra'] as const;

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

const day = (d: Date) => d.toISOString().slice(0, 10);

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
 * The runs store (`tracing_runs`, `tracing_run_payloads`, `tracing_pending_updates`,
 * `tracing_traces`): every statement tracing issues, named. Writes take the manager of the
 * caller's transaction; nothing here opens one.
 */
export class RunRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * Creates the daily partitions (runs and payloads) of the given UTC days when missing. DDL
   * races between api replicas are serialized by one transaction-scoped advisory lock, so two
   * writers never both try to create the same partition.
   */
  async ensurePartitions(days: Iterable<string>): Promise<void> {
    await this.manager.query(`SELECT pg_advisory_xact_lock(hashtext('slipway:tracing-partitions'))`);
    for (const d of days) {
      if (!/^\d{4}-\d\d-\d\d$/.test(d)) throw new Error(`not a day: ${d}`);
      const from = new Date(`${d}T00:00:00Z`);
      const to = new Date(from.getTime() + 24 * 3600_000);
      const suffix = d.replaceAll('-', '');
      for (const table of ['tracing_runs', 'tracing_run_payloads']) {
        await this.manager.query(
          `CREATE TABLE IF NOT EXISTS ${table}_p${suffix} PARTITION OF ${table} FOR VALUES FROM ('${day(from)} ` +
            `00:00:00+00') TO ('${day(to)} 00:00:00+00')`,
        );
      }
    }
  }

  /**
   * Serializes writers of the same runs and traces: transaction-scoped advisory locks, taken in
   * one sorted order so two batches sharing traces queue instead of deadlocking. A trace's
   * summary is recomputed under its lock, after every earlier writer of it committed.
   */
  async lock(workspaceId: string, keys: Iterable<string>): Promise<void> {
    const sorted = [...new Set(keys)].sort();
    if (!sorted.length) return;
    await this.manager.query(
      `SELECT pg_advisory_xact_lock(k) FROM (SELECT hashtextextended($1 || ':' || key, 0) AS k FROM ` +
        `unnest($2::text[]) AS key ORDER BY 1) keys`,
      [workspaceId, sorted],
    );
  }

  /** The stored fields of these runs, as a create and its updates would carry them, by id (unknown ids absent). */
  async loadFields(workspaceId: string, ids: string[]): Promise<Map<string, RunFields & { project_id: string }>> {
    const out = new Map<string, RunFields & { project_id: string }>();
    if (!ids.length) return out;
    const rows: Array<Record<string, unknown>> = await this.manager.query(
      `SELECT r.id, r.project_id, r.trace_id, r.parent_run_id, r.dotted_order, r.name, r.run_type, ` +
        `r.start_time, r.end_time, r.error, r.tags,
              r.reference_example_id, r.truncated_fields, p.inputs, p.outputs, p.events, p.serialized, p.extra
         FROM tracing_runs r
         LEFT JOIN tracing_run_payloads p ON p.workspace_id = r.workspace_id AND p.run_id = r.id AND p.start_time = r.start_time
        WHERE r.workspace_id = $1 AND r.id = ANY($2::uuid[])`,
      [workspaceId, ids],
    );
    for (const row of rows) {
      const fields: Record<string, unknown> = { session_id: row.project_id };
      for (const [k, v] of Object.entries(row))
        if (v !== null && k !== 'truncated_fields') fields[k] = v instanceof Date ? v.toISOString() : v;
      out.set(String(row.id), fields as unknown as RunFields & { project_id: string });
    }
    return out;
  }

  /** Removes runs (to write them again, possibly in other partitions). */
  async deleteRuns(workspaceId: string, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await this.manager.query(`DELETE FROM tracing_run_payloads WHERE workspace_id = $1 AND run_id = ANY($2::uuid[])`, [
      workspaceId,
      ids,
    ]);
    await this.manager.query(`DELETE FROM tracing_runs WHERE workspace_id = $1 AND id = ANY($2::uuid[])`, [
      workspaceId,
      ids,
    ]);
  }

  /** Inserts runs and their large fields: one statement each for all of them. */
  async insertRuns(runs: ReadonlyArray<{ row: RunRow; payload: RunPayload }>): Promise<void> {
    if (!runs.length) return;
    const params: unknown[] = [];
    const tuple = (values: unknown[], casts: string[] = []) =>
      `(${values
        .map((v, i) => {
          params.push(v);
          return `$${params.length}${casts[i] ?? ''}`;
        })
        .join(', ')})`;
    const runValues = runs.map(({ row }) =>
      tuple(
        RUN_COLUMNS.map((c) =>
          c === 'metadata' ? (row.metadata == null ? null : JSON.stringify(row.metadata)) : row[c],
        ),
      ),
    );
    await this.manager.query(
      `INSERT INTO tracing_runs (${RUN_COLUMNS.join(', ')}) VALUES ${runValues.join(', ')}`,
      params,
    );
    params.length = 0;
    const jsonb = PAYLOAD_COLUMNS.map(() => '::jsonb');
    const payloadValues = runs.map(({ row, payload }) =>
      tuple(
        [
          row.workspace_id,
          row.id,
          row.start_time,
          row.project_id,
          ...PAYLOAD_COLUMNS.map((c) => (payload[c] === undefined ? null : JSON.stringify(payload[c]))),
        ],
        ['', '', '', '', ...jsonb],
      ),
    );
    await this.manager.query(
      `INSERT INTO tracing_run_payloads (workspace_id, run_id, start_time, ` +
        `project_id, ${PAYLOAD_COLUMNS.join(', ')}) VALUES ${payloadValues.join(', ')}`,
      params,
    );
  }

  /**
   * Updates held for runs whose creates had not arrived yet, by run id, with the project each
   * writer was bound to (null: a workspace key, which may write to any project).
   */
  async pendingUpdates(
    workspaceId: string,
    ids: string[],
  ): Promise<Map<string, { patch: RunFields; projectId: string | null }>> {
    const out = new Map<string, { patch: RunFields; projectId: string | null }>();
    if (!ids.length) return out;
    const rows: Array<{ run_id: string; patch: RunFields; project_id: string | null }> = await this.manager.query(
      `SELECT run_id, patch, project_id FROM tracing_pending_updates WHERE workspace_id = $1 AND run_id = ANY($2::uuid[])`,
      [workspaceId, ids],
    );
    for (const r of rows) out.set(String(r.run_id), { patch: r.patch, projectId: r.project_id ?? null });
    return out;
  }

  async savePendingUpdate(
    workspaceId: string,
    runId: string,
    patch: RunFields,
    projectId: string | null,
  ): Promise<void> {
    await this.manager.query(
      `INSERT INTO tracing_pending_updates (workspace_id, run_id, patch, project_id) VALUES ($1, $2, $3::jsonb, $4)
       ON CONFLICT (workspace_id, run_id) DO UPDATE SET patch = EXCLUDED.patch, project_id = EXCLUDED.project_id, received_at = now()`,
      [workspaceId, runId, JSON.stringify(patch), projectId],
    );
  }

  /** Traces among `traceIds` holding a run outside `projectId`. */
  async tracesOutside(workspaceId: string, traceIds: string[], projectId: string): Promise<string[]> {
    if (!traceIds.length) return [];
    const rows: Array<{ trace_id: string }> = await this.manager.query(
      `SELECT DISTINCT trace_id FROM tracing_runs WHERE workspace_id = $1 AND trace_id = ANY($2::uuid[]) AND project_id <> $3`,
      [workspaceId, traceIds, projectId],
    );
    return rows.map((r) => r.trace_id);
  }

  async deletePendingUpdates(workspaceId: string, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await this.manager.query(
      `DELETE FROM tracing_pending_updates WHERE workspace_id = $1 AND run_id = ANY($2::uuid[])`,
      [workspaceId, ids],
    );
  }

  /**
   * Recomputes the summary row of each trace from its runs (its root's name, times and status,
   * counts and token sums, the thread and revision of the first run in tree order naming one).
   * Call under the traces' locks (`lock`), so no concurrent writer's runs
   * are missed.
   */
  async refreshTraces(workspaceId: string, traceIds: string[]): Promise<void> {
    if (!traceIds.length) return;
    await this.manager.query(
      `INSERT INTO tracing_traces AS t (workspace_id, trace_id, project_id, root_run_id, name, start_time, ` +
        `end_time, status, run_count, error_count,
                                   prompt_tokens, completion_tokens, total_tokens, thread_id, revision_id, updated_at)
       SELECT r.workspace_id, r.trace_id,
              (array_agg(r.project_id ORDER BY r.dotted_order))[1],
              (array_agg(r.id) FILTER (WHERE r.parent_run_id IS NULL))[1],
              (array_agg(r.name) FILTER (WHERE r.parent_run_id IS NULL))[1],
              min(r.start_time),
              (array_agg(r.end_time) FILTER (WHERE r.parent_run_id IS NULL))[1],
              COALESCE((array_agg(r.status) FILTER (WHERE r.parent_run_id IS NULL))[1], 'pending'),
              count(*), count(*) FILTER (WHERE r.status = 'error'),
              COALESCE(sum(r.prompt_tokens), 0), COALESCE(sum(r.completion_tokens), 0), COALESCE(sum(r.total_tokens), 0),
              (array_agg(r.thread_id ORDER BY r.dotted_order) FILTER (WHERE r.thread_id IS NOT NULL))[1],
              (array_agg(r.revision_id ORDER BY r.dotted_order) FILTER (WHERE r.revision_id IS NOT NULL))[1],
              now()
         FROM tracing_runs r
        WHERE r.workspace_id = $1 AND r.trace_id = ANY($2::uuid[])
        GROUP BY r.workspace_id, r.trace_id
       ON CONFLICT (workspace_id, trace_id) DO UPDATE SET
         project_id = EXCLUDED.project_id, root_run_id = EXCLUDED.root_run_id, name = EXCLUDED.name, start_time = EXCLUDED.start_time,
         end_time = EXCLUDED.end_time, status = EXCLUDED.status, run_count = EXCLUDED.run_count, error_count = EXCLUDED.error_count,
         prompt_tokens = EXCLUDED.prompt_tokens, completion_tokens = EXCLUDED.completion_tokens, total_tokens = EXCLUDED.total_tokens,
         thread_id = EXCLUDED.thread_id, revision_id = EXCLUDED.revision_id, updated_at = now()`,
      [workspaceId, traceIds],
    );
  }

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
        `r.id ORDER BY c.dotted_order) AS child_run_ids
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
