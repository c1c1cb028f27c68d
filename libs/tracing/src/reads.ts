import type { DataSource } from 'typeorm';
import { NotFoundError } from '@slipway/domain';
import { UnprocessableError } from './errors.js';
import { compileFilter } from './filter.js';
import { TracingProjectStore, type ProjectFilter, type ProjectRow } from './project.repository.js';
import {
  cursorAfter,
  needsPayload,
  positionOf,
  runViewV2,
  UNSUPPORTED_V2,
  type RunSelectField,
  type RunsQueryV2Input,
} from './reads-v2.js';
import { ancestorsOf } from './run-ops.js';
import { RunReadRepository, type StoredRun } from './run-read.repository.js';

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
    ...(r.payload
      ? {
          inputs: r.payload.inputs ?? {},
          outputs: r.payload.outputs ?? null,
          events: r.payload.events ?? [],
          extra: r.payload.extra ?? {},
          serialized: r.payload.serialized ?? null,
        }
      : {}),
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
    const run = await new RunReadRepository(this.dataSource.manager).get(workspaceId, id);
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
    const filter = compiled(input.filter);
    const repo = new RunReadRepository(this.dataSource.manager);
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
      filter,
      order: input.order ?? (input.trace ? 'asc' : 'desc'),
      treeOrder: Boolean(input.trace),
      withPayload: !select || select.some((f) => PAYLOAD_FIELDS.includes(f)),
      offset,
      limit,
    });
    const page = rows.slice(0, limit);
    const children = select?.includes('child_run_ids')
      ? await repo.childIds(
          workspaceId,
          page.map((r) => r.id),
        )
      : null;
    return {
      runs: page.map((r) => runView(r, children ? (children.get(r.id) ?? []) : undefined)),
      cursors: { next: rows.length > limit ? `o${offset + limit}` : null },
    };
  }

  /**
   * `POST /api/v2/runs/query`: runs of the given projects started in `[min_start_time, max_start_time]`
   * (default: the last day), newest first, or one trace's runs in tree order; only `id` and the
   * selected fields; keyset pages (`next_cursor`).
   */
  async queryRunsV2(workspaceId: string, input: RunsQueryV2Input) {
    const unsupported = UNSUPPORTED_V2.filter((k) => input[k] !== undefined);
    if (unsupported.length)
      throw new UnprocessableError(
        `${unsupported.join(', ')}: not supported by this server (it keeps no datasets, feedback or AI search).`,
      );
    const treeOrder = Boolean(input.trace_id);
    const selects = input.selects ?? [];
    const limit = Math.min(input.page_size ?? PAGE, PAGE);
    const now = Date.now();
    const repo = new RunReadRepository(this.dataSource.manager);
    const rows = await repo.query(workspaceId, {
      projectIds: input.project_ids,
      ids: input.ids ?? null,
      traceId: input.trace_id ?? null,
      isRoot: input.is_root ?? null,
      runType: input.run_type?.toLowerCase() ?? null,
      error: input.has_error ?? null,
      startTime: input.min_start_time ?? new Date(now - 24 * 3600_000).toISOString(),
      endTime: input.max_start_time ?? new Date(now).toISOString(),
      filter: compiled(input.filter),
      traceFilter: compiled(input.trace_filter),
      treeFilter: compiled(input.tree_filter),
      subtreeTokens: input.include_subtree_usage ?? false,
      after: input.cursor ? positionOf(input.cursor, treeOrder) : null,
      order: treeOrder ? 'asc' : 'desc',
      treeOrder,
      withPayload: needsPayload(selects),
      offset: 0,
      limit,
    });
    const page = rows.slice(0, limit);
    return {
      items: page.map((r) => runViewV2(r, selects)),
      next_cursor: rows.length > limit ? cursorAfter(page[page.length - 1]!, treeOrder) : null,
    };
  }

  /** `GET /api/v2/runs/{id}`: one run of one project, `id` and the selected fields; its own tokens. */
  async getRunV2(workspaceId: string, id: string, projectId: string, selects: RunSelectField[]) {
    const run = await new RunReadRepository(this.dataSource.manager).get(workspaceId, id, {
      projectId,
      subtreeTokens: false,
    });
    if (!run) throw NotFoundError.of('Run', id);
    return runViewV2(run, selects);
  }
}

/** A filter expression compiled now (a bad one is a 422 before any query runs), then per query. */
function compiled(filter: string | null | undefined): ((params: unknown[]) => string) | null {
  const f = filter?.trim();
  if (!f) return null;
  compileFilter(f, []);
  return (params) => compileFilter(f, params);
}

function cursorOffset(cursor: string): number {
  const m = /^o(\d{1,9})$/.exec(cursor);
  if (!m) throw new UnprocessableError('cursor: not a cursor this server gave.');
  return Number(m[1]);
}
