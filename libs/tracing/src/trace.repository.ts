import type { EntityManager } from 'typeorm';
import type { RevisionTraceRollup } from '@slipway/domain';

/** A trace's summary row (`tracing_traces`), recomputed from its runs on every write. */
export interface TraceRow {
  trace_id: string;
  project_id: string;
  root_run_id: string | null;
  name: string | null;
  start_time: string;
  end_time: string | null;
  status: string;
  run_count: number;
  error_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  thread_id: string | null;
  revision_id: string | null;
}

const iso = (v: unknown) => (v == null ? null : new Date(v as string | Date).toISOString());

/** The trace summaries of a project (never the runs tables: a list reads one row per trace). */
export class TraceRepository {
  constructor(private readonly manager: EntityManager) {}

  /** A page of the project's traces, newest first (its start-time index). */
  async listForProject(
    workspaceId: string,
    projectId: string,
    page: { offset: number; limit: number },
  ): Promise<TraceRow[]> {
    const rows = await this.manager.query(
      `SELECT trace_id, project_id, root_run_id, name, start_time, end_time, status, run_count, error_count,
              prompt_tokens, completion_tokens, total_tokens, thread_id, revision_id
         FROM tracing_traces
        WHERE project_id = $1 AND workspace_id = $2
        ORDER BY start_time DESC, trace_id DESC
        OFFSET $3 LIMIT $4`,
      [projectId, workspaceId, page.offset, page.limit],
    );
    return rows.map((r: Record<string, unknown>) => ({
      ...(r as unknown as TraceRow),
      start_time: iso(r.start_time)!,
      end_time: iso(r.end_time),
      run_count: Number(r.run_count),
      error_count: Number(r.error_count),
      prompt_tokens: Number(r.prompt_tokens),
      completion_tokens: Number(r.completion_tokens),
      total_tokens: Number(r.total_tokens),
    }));
  }
}

/** Revisions a deployment's rollup lists at most (the newest traced). */
const ROLLUP_REVISIONS = 20;
/** Series the installation-wide rollup reads at most (what `/metrics` can carry). */
const ROLLUP_SERIES = 2_000;

/** One rollup row: a revision's traces, and (installation-wide) its deployment's id. */
type RollupRow = RevisionTraceRollup & { deployment_id: string | null };

/**
 * Traces that started since a time, per revision (and per deployment): the summary rows only, by
 * their start-time indexes. `project`: one deployment's project (its metrics); without it, every
 * deployment's project in the installation (`/metrics`).
 */
async function rollups(
  manager: EntityManager,
  since: Date,
  project: { workspaceId: string; projectId: string } | null,
): Promise<RollupRow[]> {
  const params: unknown[] = [since];
  let where = 't.start_time >= $1';
  if (project) {
    params.push(project.projectId, project.workspaceId);
    where += ' AND t.project_id = $2 AND t.workspace_id = $3';
  }
  const rows: Array<Record<string, unknown>> = await manager.query(
    `SELECT p.deployment_id, t.revision_id, count(*) AS traces, count(*) FILTER (WHERE t.status = 'error') AS errors,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch ` +
      `FROM t.end_time - t.start_time) * 1000) FILTER (WHERE t.end_time IS NOT NULL) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch ` +
      `FROM t.end_time - t.start_time) * 1000) FILTER (WHERE t.end_time IS NOT NULL) AS p95,
            sum(t.prompt_tokens) AS prompt_tokens, sum(t.completion_tokens) AS completion_tokens, sum(t.total_tokens) AS total_tokens,
            max(t.start_time) AS last_trace_at
       FROM tracing_traces t JOIN tracing_projects p ON p.id = t.project_id
      WHERE ${where}${project ? '' : ' AND p.deployment_id IS NOT NULL'}
      GROUP BY p.deployment_id, t.revision_id
      ORDER BY max(t.start_time) DESC
      LIMIT ${project ? ROLLUP_REVISIONS : ROLLUP_SERIES}`,
    params,
  );
  const ms = (v: unknown) => (v == null ? null : Math.round(Number(v) * 10) / 10);
  return rows.map((r) => ({
    deployment_id: (r.deployment_id as string | null) ?? null,
    revision_id: (r.revision_id as string | null) ?? null,
    traces: Number(r.traces),
    errors: Number(r.errors),
    latency_p50_ms: ms(r.p50),
    latency_p95_ms: ms(r.p95),
    prompt_tokens: Number(r.prompt_tokens),
    completion_tokens: Number(r.completion_tokens),
    total_tokens: Number(r.total_tokens),
    last_trace_at: iso(r.last_trace_at)!,
  }));
}

/** A deployment's traces that started since a time, per revision, newest first (its metrics' `traces_by_revision`). */
export async function revisionRollups(
  manager: EntityManager,
  workspaceId: string,
  projectId: string,
  since: Date,
): Promise<RevisionTraceRollup[]> {
  return (await rollups(manager, since, { workspaceId, projectId })).map(({ deployment_id: _, ...rollup }) => rollup);
}

/** Every deployment's traces that started since a time, per deployment and revision (`/metrics`). */
export async function deploymentRollups(
  manager: EntityManager,
  since: Date,
): Promise<Array<RevisionTraceRollup & { deployment_id: string }>> {
  return (await rollups(manager, since, null)) as Array<RevisionTraceRollup & { deployment_id: string }>;
}

/** A trace as `GET /v2/deployments/{id}/traces` shows it (docs/tracing.md). */
export function traceView(t: TraceRow) {
  return {
    trace_id: t.trace_id,
    root_run_id: t.root_run_id,
    name: t.name,
    status: t.status,
    start_time: t.start_time,
    end_time: t.end_time,
    latency: t.end_time ? (Date.parse(t.end_time) - Date.parse(t.start_time)) / 1000 : null,
    run_count: t.run_count,
    error_count: t.error_count,
    prompt_tokens: t.prompt_tokens,
    completion_tokens: t.completion_tokens,
    total_tokens: t.total_tokens,
    thread_id: t.thread_id,
    revision_id: t.revision_id,
    session_id: t.project_id,
  };
}

export type TraceView = ReturnType<typeof traceView>;
