import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { UnprocessableError } from './errors.js';

/**
 * A project name's most bytes (UTF-8). Names are unique per workspace through a btree index, whose
 * entries Postgres caps near 2.7 KB: 1,024 characters of a non-Latin script passed it, and the
 * write failed in the database instead of being refused.
 */
export const MAX_PROJECT_NAME_BYTES = 1024;

/** A tracing project with what its traces add up to. */
export interface ProjectRow {
  id: string;
  workspace_id: string;
  name: string;
  deployment_id: string | null;
  created_at: string;
  trace_count: number;
  run_count: number;
  error_count: number;
  total_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  last_run_start_time: string | null;
}

export interface ProjectFilter {
  ids?: string[];
  name?: string;
  nameContains?: string;
  offset: number;
  limit: number;
}

const SELECT_PROJECT = `
  SELECT p.id, p.workspace_id, p.name, p.deployment_id, p.created_at,
         COALESCE(s.trace_count, 0) AS trace_count, COALESCE(s.run_count, 0) AS run_count, COALESCE(s.error_count, 0) AS error_count,
         COALESCE(s.total_tokens, 0) AS total_tokens, COALESCE(s.prompt_tokens, 0) AS prompt_tokens,
         COALESCE(s.completion_tokens, 0) AS completion_tokens, s.last_run_start_time
    FROM tracing_projects p
    LEFT JOIN LATERAL (
      SELECT count(*) AS trace_count, sum(t.run_count) AS run_count, sum(t.error_count) AS error_count, sum(t.total_tokens) AS total_tokens,
             sum(t.prompt_tokens) AS prompt_tokens, sum(t.completion_tokens) AS completion_tokens, max(t.start_time) AS last_run_start_time
        FROM tracing_traces t WHERE t.project_id = p.id
    ) s ON true`;

/**
 * Tracing projects as the ingest and the LangSmith reads see them: `tracing_projects` rows of
 * one workspace (the ones deployments create, and the ones a first write names).
 */
export class TracingProjectStore {
  constructor(private readonly manager: EntityManager) {}

  /**
   * The id of the workspace's project of this name, created when missing. Concurrent first
   * writes of one name meet at the unique (workspace_id, name): one inserts, all read it.
   */
  async idForName(workspaceId: string, name: string): Promise<string> {
    if (Buffer.byteLength(name) > MAX_PROJECT_NAME_BYTES)
      throw new UnprocessableError(
        `The project name ${JSON.stringify(name.slice(0, 40))}… is longer than ${MAX_PROJECT_NAME_BYTES} bytes (UTF-8).`,
      );
    await this.manager.query(
      `INSERT INTO tracing_projects (id, workspace_id, name) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, name) DO NOTHING`,
      [randomUUID(), workspaceId, name],
    );
    const [row] = await this.manager.query(`SELECT id FROM tracing_projects WHERE workspace_id = $1 AND name = $2`, [
      workspaceId,
      name,
    ]);
    return row.id;
  }

  /** Which of these ids are projects of the workspace. */
  async existing(workspaceId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.manager.query(
      `SELECT id FROM tracing_projects WHERE workspace_id = $1 AND id = ANY($2::uuid[])`,
      [workspaceId, ids],
    );
    return new Set(rows.map((r: { id: string }) => r.id));
  }

  /** The deployments these projects of the workspace belong to (projects of no deployment left out). */
  async deploymentsOf(workspaceId: string, projectIds: string[]): Promise<string[]> {
    if (!projectIds.length) return [];
    const rows = await this.manager.query(
      `SELECT DISTINCT deployment_id FROM tracing_projects WHERE workspace_id = $1 AND id = ANY($2::uuid[]) AND deployment_id IS NOT NULL`,
      [workspaceId, projectIds],
    );
    return rows.map((r: { deployment_id: string }) => r.deployment_id);
  }

  async get(workspaceId: string, id: string): Promise<ProjectRow | null> {
    const [row] = await this.manager.query(`${SELECT_PROJECT} WHERE p.workspace_id = $1 AND p.id = $2`, [
      workspaceId,
      id,
    ]);
    return row ? toProject(row) : null;
  }

  /** A page of the workspace's projects, newest first. */
  async list(workspaceId: string, filter: ProjectFilter): Promise<ProjectRow[]> {
    const params: unknown[] = [workspaceId];
    const where = ['p.workspace_id = $1'];
    if (filter.ids?.length) where.push(`p.id = ANY($${params.push(filter.ids)}::uuid[])`);
    if (filter.name !== undefined) where.push(`p.name = $${params.push(filter.name)}`);
    if (filter.nameContains !== undefined)
      where.push(`strpos(lower(p.name), lower($${params.push(filter.nameContains)})) > 0`);
    const rows = await this.manager.query(
      `${SELECT_PROJECT} WHERE ${where.join(' AND ')} ORDER BY p.created_at DESC, p.id DESC ` +
        `OFFSET $${params.push(filter.offset)} LIMIT $${params.push(filter.limit)}`,
      params,
    );
    return rows.map(toProject);
  }
}

function toProject(row: Record<string, any>): ProjectRow {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    deployment_id: row.deployment_id,
    created_at: new Date(row.created_at).toISOString(),
    trace_count: Number(row.trace_count),
    run_count: Number(row.run_count),
    error_count: Number(row.error_count),
    total_tokens: Number(row.total_tokens),
    prompt_tokens: Number(row.prompt_tokens),
    completion_tokens: Number(row.completion_tokens),
    last_run_start_time: row.last_run_start_time ? new Date(row.last_run_start_time).toISOString() : null,
  };
}
