// Rows of the agent tables <-> the records of the LangGraph Server API, and the pieces of SQL the
// repositories share (filters built with numbered parameters, auth filters as jsonb containment).
import type { Assistant, AssistantVersion, Run, Thread } from '@langchain/langgraph-api/storage';

/**
 * A value as a jsonb parameter: the form the API answers with (LangChain messages and other
 * objects with `toDict` become their dict), so a record reads back as it would have been served.
 */
export function json(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return JSON.stringify(value, function replacer(this: any, key: string, v: unknown) {
    const raw = this[key];
    if (raw != null && typeof raw === 'object' && typeof raw.toDict === 'function') {
      const { type, data } = raw.toDict();
      return { ...data, type };
    }
    return v;
  });
}

export const toAssistant = (r: any): Assistant => ({
  assistant_id: r.assistant_id,
  graph_id: r.graph_id,
  name: r.name ?? r.graph_id,
  description: r.description ?? null,
  config: r.config ?? {},
  context: r.context ?? undefined,
  metadata: r.metadata ?? {},
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export const toAssistantVersion = (r: any): AssistantVersion => ({
  assistant_id: r.assistant_id,
  version: r.version,
  graph_id: r.graph_id,
  name: r.name,
  description: r.description ?? null,
  config: r.config ?? {},
  context: r.context ?? undefined,
  metadata: r.metadata ?? {},
  created_at: r.created_at,
});

export const toThread = (r: any): Thread => ({
  thread_id: r.thread_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  metadata: r.metadata ?? {},
  config: r.config ?? {},
  status: r.status,
  values: r.values ?? undefined,
  interrupts: r.interrupts ?? undefined,
});

export const toRun = (r: any): Run => ({
  run_id: r.run_id,
  thread_id: r.thread_id,
  assistant_id: r.assistant_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  status: r.status,
  metadata: r.metadata ?? {},
  kwargs: r.kwargs ?? {},
  multitask_strategy: r.multitask_strategy,
});

/** The columns a run is read with (the queue's own columns stay inside the host). */
export const RUN_COLUMNS =
  'run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, created_at, updated_at';

/** A thread's status once its run is over: `busy` while other runs of it wait, else `fallback`. */
export const threadStatusAfterRun = (threadParam: string, fallback = `'idle'`) =>
  `CASE WHEN EXISTS (SELECT 1 FROM slipway_agent_runs WHERE thread_id = ${threadParam} AND status = 'pending') ` +
  `THEN 'busy' ELSE ${fallback} END`;

/** A WHERE clause built piece by piece, its values as numbered parameters. */
export class Where {
  readonly params: unknown[] = [];
  private readonly parts: string[] = [];

  /** Adds `sql`, where each `?` is the next of `values`. */
  add(sql: string, ...values: unknown[]): this {
    let i = 0;
    this.parts.push(sql.replace(/\?/g, () => this.param(values[i++])));
    return this;
  }

  /** A parameter's placeholder. */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** Metadata containment (`column @> value`), which the GIN index answers. */
  contains(column: string, value: Record<string, unknown> | null | undefined): this {
    if (value != null && Object.keys(value).length) this.add(`${column} @> ?::jsonb`, json(value));
    return this;
  }

  /**
   * The filters of a custom auth handler (`{key: value}`, `{key: {$eq}}`, `{key: {$contains}}`),
   * as the in-memory server reads them: equality and list containment at the top level.
   */
  auth(column: string, filters: Record<string, unknown> | undefined | null): this {
    for (const [key, value] of Object.entries(filters ?? {})) {
      if (value != null && typeof value === 'object' && '$contains' in value) {
        const wanted = (value as { $contains: unknown }).$contains;
        this.add(
          `jsonb_typeof(${column}->?) = 'array' AND ${column}->? @> ?::jsonb`,
          key,
          key,
          json(Array.isArray(wanted) ? wanted : [wanted]),
        );
      } else {
        const wanted =
          value != null && typeof value === 'object' && '$eq' in value ? (value as { $eq: unknown }).$eq : value;
        this.add(`${column} @> ?::jsonb`, json({ [key]: wanted }));
      }
    }
    return this;
  }

  toString(): string {
    return this.parts.length ? `WHERE ${this.parts.join(' AND ')}` : '';
  }
}

/**
 * ORDER BY a sort column named by the API (checked against the ones the table has), then the
 * table's key in the same direction, so one (column, key) index serves both directions.
 */
export function orderBy(
  sortBy: string | undefined,
  allowed: readonly string[],
  fallback: string,
  order: string | undefined,
  key: string,
): string {
  const column = sortBy && allowed.includes(sortBy) ? sortBy : fallback;
  const dir = order === 'asc' ? 'ASC' : 'DESC';
  return column === key ? `ORDER BY ${key} ${dir}` : `ORDER BY ${column} ${dir}, ${key} ${dir}`;
}
