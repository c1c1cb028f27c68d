import type { DataSource } from 'typeorm';
import { ConflictError, NotFoundError } from '@slipway/domain';
import { PayloadTooLargeError, UnprocessableError } from './errors.js';
import { DEFAULT_INGEST_LIMITS, type IngestLimits } from './limits.js';
import { TracingProjectStore } from './project.repository.js';
import { capPayload, promote, type RunPayload, type RunRow } from './promote.js';
import { RunRepository } from './run.repository.js';
import { mergeFields, mergeInto, type RunFields, type RunOperation } from './run-ops.js';

/** The project runs go to when they name none (LangSmith's default). */
export const DEFAULT_PROJECT = 'default';

const DAY_MS = 24 * 3600_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * Writes run operations: each request's creates and updates, validated whole beforehand, in one
 * transaction. A create and the updates of the same run may come in any order and in different
 * requests: an update of a run not created yet is held (`tracing_pending_updates`) and folded in
 * when the create comes; an update of a stored run is merged into it. Each trace touched gets its
 * summary row recomputed in the same transaction.
 */
export class TracingIngest {
  /** Days whose partitions this process has seen to exist (created once, then cached). */
  private readonly partitions = new Set<string>();

  constructor(
    private readonly dataSource: DataSource,
    readonly limits: IngestLimits = DEFAULT_INGEST_LIMITS,
    private readonly now: () => number = Date.now,
    /**
     * Told, after each write commits, the deployments whose tracing projects it wrote runs to
     * (a trace is activity of its deployment: UNUSED, docs/api.md). Called once per write with
     * each deployment once, and awaited: it must not throw for what is already committed.
     */
    private readonly onDeploymentsWritten?: (deploymentIds: string[]) => Promise<void>,
  ) {}

  /**
   * Writes the operations; returns the deployments whose projects got runs. `boundTo`: the one
   * project a writer bound to it may write (a deployment's trace front): every run goes there
   * whatever project it names, and a request touching a run or trace of any other project is
   * refused whole (409), so such a writer can neither read nor change another project's runs,
   * even knowing their ids. Without it (a workspace key), each create names its project. A day's partition
   * this process remembered can have been dropped since by retention (an old `start_time`
   * within what ingest accepts): the insert then finds no partition, the transaction rolls
   * back whole, and the write runs once more after making the partitions again.
   */
  async write(
    workspaceId: string,
    operations: RunOperation[],
    boundTo: string | null = null,
  ): Promise<{ deploymentIds: string[] }> {
    let deploymentIds: string[];
    try {
      deploymentIds = await this.writeOnce(workspaceId, operations, boundTo);
    } catch (err) {
      if (!isMissingPartition(err)) throw err;
      this.partitions.clear();
      deploymentIds = await this.writeOnce(workspaceId, operations, boundTo);
    }
    if (deploymentIds.length) await this.onDeploymentsWritten?.(deploymentIds);
    return { deploymentIds };
  }

  private async writeOnce(workspaceId: string, operations: RunOperation[], boundTo: string | null): Promise<string[]> {
    if (!operations.length) return [];
    // Fold the request's own operations per run first: its creates, then its updates, in order.
    const byRun = new Map<string, { create: RunFields | null; update: RunFields | null }>();
    for (const { kind, fields } of operations) {
      const id = fields.id.toLowerCase();
      const entry = byRun.get(id) ?? { create: null, update: null };
      // In place: the fold's own objects (mergeInto), so many operations of one run stay linear.
      if (kind === 'create') entry.create = mergeInto((entry.create ?? {}) as Record<string, unknown>, fields);
      else entry.update = mergeInto((entry.update ?? {}) as Record<string, unknown>, fields);
      byRun.set(id, entry);
    }
    const now = this.now();
    const days = new Set<string>();
    for (const [id, { create }] of byRun) {
      if (!create) continue;
      const start = Date.parse(create.start_time!);
      if (start < now - this.limits.maxRunAgeMs || start > now + this.limits.maxClockSkewMs) {
        throw new UnprocessableError(
          `run ${id}: start_time ${create.start_time} is outside what this server keeps ` +
            `(${Math.round(this.limits.maxRunAgeMs / DAY_MS)} days back, a day ahead).`,
        );
      }
      days.add(dayOf(start));
    }
    // Today's and tomorrow's partitions are made ahead, so the common write never waits on DDL.
    days.add(dayOf(now));
    days.add(dayOf(now + DAY_MS));
    const missing = [...days].filter((d) => !this.partitions.has(d)).sort();
    if (missing.length) {
      // Its own transaction: DDL committed even when the batch is then refused is harmless.
      await this.dataSource.transaction((m) => new RunRepository(m).ensurePartitions(missing));
      for (const d of missing) this.partitions.add(d);
    }

    return this.dataSource.transaction(async (m) => {
      const runs = new RunRepository(m);
      const projects = new TracingProjectStore(m);
      const keys: string[] = [];
      for (const [id, { create, update }] of byRun) {
        keys.push(`run:${id}`);
        const trace = create?.trace_id ?? update?.trace_id;
        if (trace) keys.push(`trace:${trace.toLowerCase()}`);
      }
      // First, before any table: the locks include the partitions' (RunRepository.lock), all of them
      // waited for within maxLockWaitMs (then 429, nothing written).
      await runs.lock(workspaceId, keys, this.limits.maxLockWaitMs);
      const projectIds = boundTo ? null : await this.resolveProjects(projects, workspaceId, [...byRun.values()]);
      if (boundTo) {
        const traceIds = [...byRun.values()]
          .flatMap(({ create, update }) => [create?.trace_id, update?.trace_id])
          .filter((t): t is string => !!t);
        const foreign = await runs.tracesOutside(
          workspaceId,
          [...new Set(traceIds.map((t) => t.toLowerCase()))],
          boundTo,
        );
        if (foreign.length) throw notTheWritersProject('trace', foreign[0]!);
      }

      const traces = new Set<string>();
      const written = new Set<string>();
      // Every run's stored fields and held update in two statements, the writes in four (at most).
      const ids = [...byRun.keys()];
      const [storedRuns, heldUpdates] = await Promise.all([
        runs.loadFields(workspaceId, ids),
        runs.pendingUpdates(workspaceId, ids),
      ]);
      const replaced: string[] = [];
      const absorbed: string[] = [];
      const inserts: Array<{ row: RunRow; payload: RunPayload }> = [];
      for (const [id, { create, update }] of byRun) {
        const stored = storedRuns.get(id) ?? null;
        const held = heldUpdates.get(id) ?? null;
        // A bound writer touches neither a stored run of another project nor an update held for one.
        const owner = stored ? stored.project_id : !create && held ? held.projectId : boundTo;
        if (boundTo && owner !== boundTo) throw notTheWritersProject('run', id);
        if (!create && !stored) {
          // An update before its create: held until the create comes, no larger than one request's body
          // (each update would otherwise add to it, and every later one read and rewrite it whole).
          const patch = mergeFields(held?.patch ?? null, update!);
          if (Buffer.byteLength(JSON.stringify(patch)) > this.limits.maxBodyBytes)
            throw new PayloadTooLargeError(
              `run ${id}: the updates held until its create comes would pass ${this.limits.maxBodyBytes} bytes.`,
            );
          await runs.savePendingUpdate(workspaceId, id, patch, boundTo);
          continue;
        }
        const projectId = boundTo ?? this.projectOf(create, stored?.project_id, projectIds!);
        // A held update is folded in only when written for this run's project, or by a workspace key.
        const pending = held && (held.projectId === null || held.projectId === projectId) ? held.patch : null;
        let fields = mergeFields(stored, create ?? ({ id } as RunFields));
        if (pending) fields = mergeFields(fields, pending);
        if (update) fields = mergeFields(fields, update);
        const { payload, truncated } = capPayload(fields, this.limits.maxStoredFieldBytes);
        const row = promote(workspaceId, projectId, fields, truncated);
        if (stored) {
          replaced.push(id);
          if (stored.trace_id && stored.trace_id !== row.trace_id) traces.add(stored.trace_id);
        }
        inserts.push({ row, payload });
        if (pending) absorbed.push(id);
        traces.add(row.trace_id);
        written.add(projectId);
      }
      await runs.deleteRuns(workspaceId, replaced);
      await runs.insertRuns(inserts);
      await runs.deletePendingUpdates(workspaceId, absorbed);
      await runs.refreshTraces(workspaceId, [...traces]);
      return projects.deploymentsOf(workspaceId, [...written]);
    });
  }

  /** Project ids by the `session_id:`/`session_name:` each create names; 404 for an id outside the workspace. */
  private async resolveProjects(
    projects: TracingProjectStore,
    workspaceId: string,
    entries: Array<{ create: RunFields | null }>,
  ): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const ids = new Set<string>();
    const names = new Set<string>();
    for (const { create } of entries) {
      if (!create) continue;
      if (create.session_id) ids.add(create.session_id.toLowerCase());
      else names.add(create.session_name || DEFAULT_PROJECT);
    }
    const found = await projects.existing(workspaceId, [...ids]);
    for (const id of ids) {
      if (!found.has(id)) throw new NotFoundError(`Project ID ${id} not found.`);
      out.set(`session_id:${id}`, id);
    }
    for (const name of [...names].sort()) out.set(`session_name:${name}`, await projects.idForName(workspaceId, name));
    return out;
  }

  private projectOf(create: RunFields | null, stored: string | undefined, projectIds: Map<string, string>): string {
    if (!create) return stored!;
    if (create.session_id) return projectIds.get(`session_id:${create.session_id.toLowerCase()}`)!;
    return projectIds.get(`session_name:${create.session_name || DEFAULT_PROJECT}`)!;
  }
}

/** 409: a bound writer named a run or trace of another project (TracingIngest.write). */
function notTheWritersProject(kind: 'run' | 'trace', id: string): ConflictError {
  return new ConflictError(`${kind} ${id} is not in this writer's project; nothing was written.`);
}

/** Postgres's answer to a row whose partition does not exist (23514, "no partition of relation … found for row"). */
function isMissingPartition(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23514' && /no partition of relation/.test(e.message ?? '');
}
