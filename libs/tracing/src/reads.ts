import type { DataSource } from 'typeorm';
import { NotFoundError } from '@slipway/domain';
import { UnprocessableError } from './errors.js';
import { compileFilter } from './filter.js';
import { TracingProjectStore, type ProjectFilter, type ProjectRow } from './project.repository.js';
import { ancestorsOf } from './run-ops.js';
import { RunRepository, type StoredRun } from './run.repository.js';

/** A project as LangSmith's `GET /sessions` answers it (TracerSession), with its stats. */
export function projectView(p: ProjectRow) {
  return {
    id: p.id,
    name: p.name,
    tenant_id: p.workspace_id,
    description: null,
    start_time: p.created_at,
    end_time: null,
    extra: null,
    reference_dataset_id: null,
    deployment_id: p.deployment_id,
    trace_count: p.trace_count,
    run_count: p.run_count,
    error_rate: p.run_count ? p.error_count / p.run_count : null,
    total_tokens: p.total_tokens,
    prompt_tokens: p.prompt_tokens,
    completion_tokens: p.completion_tokens,
    last_run_start_time: p.last_run_start_time,
  };
}

/** A run as LangSmith's reads answer it (its `Run` schema, the fields this store keeps). */
export function runView(r: StoredRun, childRunIds?: string[]) {
  return {
    id: r.id,
    name: r.name,
    run_type: r.run_type,
    start_time: r.start_time,
    end_time: r.end_time,
    status: r.status,
    error: r.error,
    ...(r.payload ? { inputs: r.payload.inputs ?? {}, outputs: r.payload.outputs ?? null, events: r.payload.events ?? [], extra: r.payload.extra ?? {}, serialized: r.payload.serialized ?? null } : {}),
    tags: r.tags,
    session_id: r.project_id,
    trace_id: r.trace_id,
    parent_run_id: r.parent_run_id,
    parent_run_ids: ancestorsOf(r.dotted_order),
    dotted_order: r.dotted_order,
    reference_example_id: r.reference_example_id,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    total_tokens: r.total_tokens,
    prompt_cost: null,
    completion_cost: null,
    total_cost: null,
    first_token_time: r.first_token_time,
    feedback_stats: null,
    thread_id: r.thread_id,
    /** Slipway: the large fields stored cut because they were over the per-field cap. */
    truncated_fields: r.truncated_fields,
    app_path: `/o/${r.workspace_id}/projects/p/${r.project_id}/r/${r.id}?trace_id=${r.trace_id}`,
    ...(childRunIds ? { child_run_ids: childRunIds } : {}),
  };
}

/** The body of `POST /runs/query` (LangSmith's field names). */
export interface RunsQueryInput {
  session?: string[] | null;
  id?: string[] | null;
  trace?: string | null;
  parent_run?: string | null;
  is_root?: boolean | null;
  run_type?: string | null;
  error?: boolean | null;
  start_time?: string | null;
  end_time?: string | null;
  filter?: string | null;
  select?: string[] | null;
  order?: 'asc' | 'desc' | null;
  limit?: number | null;
  cursor?: string | null;
}

const PAYLOAD_FIELDS = ['inputs', 'outputs', 'events', 'extra', 'serialized'];
const PAGE = 100;

/** The LangSmith read side: projects and runs of one workspace, never another's. */
export class TracingReads {
  constructor(private readonly dataSource: DataSource) {}

  async listProjects(workspaceId: string, filter: ProjectFilter) {
    return (await new TracingProjectStore(this.dataSource.manager).list(workspaceId, filter)).map(projectView);
  }

  async getProject(workspaceId: string, id: string) {
    const project = await new TracingProjectStore(this.dataSource.manager).get(workspaceId, id);
    if (!project) throw NotFoundError.of('Project', id);
    return projectView(project);
  }

  async getRun(workspaceId: string, id: string) {
    const run = await new RunRepository(this.dataSource.manager).get(workspaceId, id);
    if (!run) throw NotFoundError.of('Run', id);
    return runView(run, run.child_run_ids);
  }

  /**
   * A page of runs and the cursor of the next. The runs of one trace come in dotted order
   * (tree order); others by start time, newest first unless `order` is `asc`.
   */
  async queryRuns(workspaceId: string, input: RunsQueryInput) {
    const offset = input.cursor ? cursorOffset(input.cursor) : 0;
    const limit = Math.min(input.limit ?? PAGE, PAGE);
    const select = input.select ?? null;
    const filter = input.filter?.trim();
    // Compiled now, so a bad filter is a 422 before any query runs.
    if (filter) compileFilter(filter, []);
    const repo = new RunRepository(this.dataSource.manager);
    const rows = await repo.query(workspaceId, {
      projectIds: input.session ?? null,
      ids: input.id ?? null,
      traceId: input.trace ?? null,
      parentRunId: input.parent_run ?? null,
      isRoot: input.is_root ?? null,
      runType: input.run_type ?? null,
      error: input.error ?? null,
      startTime: input.start_time ?? null,
      endTime: input.end_time ?? null,
      filter: filter ? (params) => compileFilter(filter, params) : null,
      order: input.order ?? (input.trace ? 'asc' : 'desc'),
      treeOrder: Boolean(input.trace),
      withPayload: !select || select.some((f) => PAYLOAD_FIELDS.includes(f)),
      offset,
      limit,
    });
    const page = rows.slice(0, limit);
    const children = select?.includes('child_run_ids') ? await repo.childIds(workspaceId, page.map((r) => r.id)) : null;
    return {
      runs: page.map((r) => runView(r, children ? (children.get(r.id) ?? []) : undefined)),
      cursors: { next: rows.length > limit ? `o${offset + limit}` : null },
    };
  }
}

function cursorOffset(cursor: string): number {
  const m = /^o(\d{1,9})$/.exec(cursor);
  if (!m) throw new UnprocessableError('cursor: not a cursor this server gave.');
  return Number(m[1]);
}
