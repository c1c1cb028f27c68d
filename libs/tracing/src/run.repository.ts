import { TooManyRequestsError } from '@slipway/domain';
import type { EntityManager } from 'typeorm';
import type { RunPayload, RunRow } from './promote.js';
import type { RunFields } from './run-ops.js';

/** SQLSTATE of a statement past its statement_timeout. */
const QUERY_CANCELED = '57014';
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

/** The large fields of a run, stored apart (`tracing_run_payloads`) and read only when asked for. */
export const PAYLOAD_COLUMNS = ['inputs', 'outputs', 'events', 'serialized', 'extra'] as const;

const day = (d: Date) => d.toISOString().slice(0, 10);

/**
 * The advisory lock ordering the daily partitions' DDL against writes of runs: creating a day
 * (`ensurePartitions`) and dropping one (retention) take it alone; every write transaction takes
 * it shared, first (`lock`). A partition of a table with a foreign key locks the key's table
 * (`tracing_projects`) against writes, and a write that had inserted a project before reading
 * the runs then waited for the new partition while the DDL waited for it: a deadlock.
 */
export const PARTITIONS_LOCK = `hashtext('slipway:tracing-partitions')`;

/**
 * The runs store's writes (`tracing_runs`, `tracing_run_payloads`, `tracing_pending_updates`,
 * `tracing_traces`): every statement tracing's ingest issues, named. Writes take the manager of the
 * caller's transaction; nothing here opens one. Its reads are RunReadRepository's.
 */
export class RunRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * Creates the daily partitions (runs and payloads) of the given UTC days when missing, under
   * PARTITIONS_LOCK alone: two api replicas never both try to create the same partition, and no
   * write is midway.
   */
  async ensurePartitions(days: Iterable<string>): Promise<void> {
    await this.manager.query(`SELECT pg_advisory_xact_lock(${PARTITIONS_LOCK})`);
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
   * summary is recomputed under its lock, after every earlier writer of it committed. Takes
   * PARTITIONS_LOCK shared too: call it first in a write transaction, before any table is touched.
   */
  async lock(workspaceId: string, keys: Iterable<string>, maxWaitMs?: number): Promise<void> {
    const sorted = [...new Set(keys)].sort();
    const take = () =>
      this.manager.query(
        `SELECT pg_advisory_xact_lock_shared(${PARTITIONS_LOCK}) UNION ALL ` +
          `SELECT pg_advisory_xact_lock(k) FROM (SELECT hashtextextended($1 || ':' || key, 0) AS k FROM ` +
          `unnest($2::text[]) AS key ORDER BY 1) keys`,
        [workspaceId, sorted],
      );
    if (maxWaitMs === undefined) return void (await take());
    // The whole statement (every lock it waits for) within maxWaitMs: a statement timeout for it
    // alone, the transaction's own put back after it (a lock_timeout would bound each lock apart).
    const [{ before }] = await this.manager.query(
      `SELECT current_setting('statement_timeout') AS before, set_config('statement_timeout', $1, true)`,
      [`${Math.max(1, Math.round(maxWaitMs))}ms`],
    );
    try {
      await take();
    } catch (err) {
      if ((err as { code?: string })?.code === QUERY_CANCELED)
        throw new TooManyRequestsError('Other writes of the same runs are under way; send again shortly.', 1);
      throw err;
    }
    await this.manager.query(`SELECT set_config('statement_timeout', $1, true)`, [before]);
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
}
