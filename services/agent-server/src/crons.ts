// Crons, one row each (LangGraph Server API: /runs/crons, /threads/{id}/runs/crons). The
// published server has none; the host serves their routes (cron-routes.ts) and fires them: every
// instance's scheduler claims the due rows (FOR UPDATE SKIP LOCKED) and, in one transaction,
// creates each one's run and moves its next_run_date past now. A tick is claimed by one instance
// only, so it makes one run whatever the number of instances.
import { randomUUID } from 'node:crypto';
import type { Run, RunKwargs } from '@langchain/langgraph-api/storage';
import { v7 as uuid7 } from '@langchain/core/utils/uuid';
import { CronExpressionParser } from 'cron-parser';
import { HTTPException } from 'hono/http-exception';
import { inTransaction, type Db, type Tx } from './db.js';
import { json, orderBy, Where } from './rows.js';
import type { PgRuns } from './runs.js';
import type { RunStreams } from './streams.js';
import type { PgThreads } from './threads.js';
import { applyAuthToRunConfig, handleAuthEvent, isAuthMatching, logger, type AuthContext } from './upstream.js';

/** The fields of a cron create/update that make up each run (the rest describe the schedule). */
export const RUN_FIELDS = [
  'input',
  'config',
  'context',
  'metadata',
  'webhook',
  'interrupt_before',
  'interrupt_after',
  'multitask_strategy',
  'stream_mode',
  'stream_subgraphs',
  'stream_resumable',
  'durability',
  'checkpoint_during',
] as const;

export interface CronSchedule {
  schedule: string;
  timezone?: string | null;
  end_time?: string | null;
  enabled?: boolean;
  on_run_completed?: 'delete' | 'keep';
}

export type CronCreate = CronSchedule & { assistant_id: string } & Partial<Record<(typeof RUN_FIELDS)[number], any>>;
export type CronPatch = Partial<CronCreate>;
export interface CronQuery {
  assistant_id?: string;
  thread_id?: string;
  enabled?: boolean;
  metadata?: Record<string, unknown>;
  limit?: number;
  offset?: number;
  sort_by?: string;
  sort_order?: string;
  select?: string[];
}

const SORTS = ['cron_id', 'assistant_id', 'thread_id', 'created_at', 'updated_at', 'next_run_date'] as const;
/** Due crons one scheduler pass takes at most. */
const FIRE_BATCH = 20;
const notFound = (cronId: string) => new HTTPException(404, { message: `Cron with ID ${cronId} not found` });

/** The first time the schedule names strictly after `after`; throws on a schedule or timezone it cannot read. */
export function nextRunDate(schedule: string, timezone: string | null | undefined, after: Date): Date {
  return CronExpressionParser.parse(schedule, { currentDate: after, tz: timezone ?? 'UTC' })
    .next()
    .toDate();
}

const iso = (value: Date | string | null | undefined) => (value == null ? null : new Date(value).toISOString());

export const toCron = (r: any) => ({
  cron_id: r.cron_id,
  assistant_id: r.assistant_id,
  thread_id: r.thread_id ?? null,
  ...(r.thread_id == null ? { on_run_completed: r.on_run_completed ?? 'delete' } : {}),
  end_time: iso(r.end_time),
  schedule: r.schedule,
  timezone: r.timezone ?? null,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  payload: r.payload ?? {},
  user_id: r.user_id ?? null,
  next_run_date: iso(r.next_run_date),
  metadata: r.metadata ?? {},
  enabled: r.enabled,
});

const runPayload = (body: object) =>
  Object.fromEntries(
    RUN_FIELDS.filter((k) => (body as Record<string, unknown>)[k] !== undefined).map((k) => [
      k,
      (body as Record<string, unknown>)[k],
    ]),
  );

export class PgCrons {
  constructor(
    private readonly db: Db,
    private readonly threads: PgThreads,
    private readonly runs: PgRuns,
    private readonly streams: RunStreams,
  ) {}

  /** Where the schedule is next due from now, or null when that is past its end time (or it is disabled). */
  private static due(
    s: { schedule: string; timezone?: string | null; end_time?: string | Date | null; enabled?: boolean },
    now: Date,
  ): Date | null {
    if (s.enabled === false) return null;
    const next = nextRunDate(s.schedule, s.timezone, now);
    return s.end_time != null && next > new Date(s.end_time) ? null : next;
  }

  async create(threadId: string | undefined, assistantId: string, body: CronCreate, auth: AuthContext) {
    const payload = runPayload(body);
    const [, mutable] = await handleAuthEvent(auth, 'crons:create', {
      payload,
      schedule: body.schedule,
      cron_id: undefined,
      thread_id: threadId,
      user_id: auth?.user?.identity,
      end_time: body.end_time,
    });
    if (threadId != null) {
      const [threadFilters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
      if (!(await this.threads.visible(threadId, threadFilters)))
        throw new HTTPException(404, { message: `Thread with ID ${threadId} not found` });
    }
    const metadata = (mutable?.payload?.metadata ?? payload.metadata ?? {}) as Record<string, unknown>;
    const { rows: assistant } = await this.db.query('SELECT 1 FROM slipway_agent_assistants WHERE assistant_id = $1', [
      assistantId,
    ]);
    if (!assistant.length) throw new HTTPException(404, { message: `Assistant with ID ${assistantId} not found` });
    const { rows } = await this.db.query(
      `INSERT INTO slipway_agent_crons (cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, ` +
        `metadata, on_run_completed, enabled, end_time, next_run_date, auth)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING *`,
      [
        randomUUID(),
        assistantId,
        threadId ?? null,
        auth?.user?.identity ?? null,
        body.schedule,
        body.timezone ?? null,
        json({ ...payload, metadata }),
        json(metadata),
        threadId == null ? (body.on_run_completed ?? 'delete') : null,
        body.enabled ?? true,
        body.end_time ?? null,
        PgCrons.due(body, new Date()),
        auth ? json({ user: auth.user, scopes: auth.scopes }) : null,
      ],
    );
    return toCron(rows[0]);
  }

  private searchWhere(query: CronQuery, filters: Record<string, unknown> | undefined): Where {
    const where = new Where();
    if (query.assistant_id != null) where.add('assistant_id = ?', query.assistant_id);
    if (query.thread_id != null) where.add('thread_id = ?', query.thread_id);
    if (query.enabled != null) where.add('enabled = ?', query.enabled);
    return where.contains('metadata', query.metadata).auth('metadata', filters);
  }

  async search(query: CronQuery, auth: AuthContext) {
    const [filters] = await handleAuthEvent(auth, 'crons:search', {
      assistant_id: query.assistant_id,
      thread_id: query.thread_id,
      limit: query.limit,
      offset: query.offset,
    });
    const where = this.searchWhere(query, filters);
    const { rows } = await this.db.query(
      `SELECT * FROM slipway_agent_crons ${where} ${orderBy(query.sort_by, SORTS, 'created_at', query.sort_order, 'cron_id')}
       LIMIT ${where.param(query.limit ?? 10)} OFFSET ${where.param(query.offset ?? 0)}`,
      where.params,
    );
    const crons = rows.map(toCron);
    if (!query.select?.length) return crons;
    return crons.map((c) =>
      Object.fromEntries(query.select!.filter((k) => k in c).map((k) => [k, c[k as keyof typeof c]])),
    );
  }

  async count(query: CronQuery, auth: AuthContext): Promise<number> {
    const [filters] = await handleAuthEvent(auth, 'crons:search', {
      assistant_id: query.assistant_id,
      thread_id: query.thread_id,
      limit: 0,
      offset: 0,
    });
    const where = this.searchWhere(query, filters);
    const { rows } = await this.db.query(`SELECT count(*)::int AS n FROM slipway_agent_crons ${where}`, where.params);
    return rows[0].n;
  }

  private async visible(tx: Pick<Tx, 'query'>, cronId: string, filters: Record<string, unknown> | undefined) {
    const { rows } = await tx.query('SELECT * FROM slipway_agent_crons WHERE cron_id = $1 FOR UPDATE', [cronId]);
    if (!rows.length || !isAuthMatching(rows[0].metadata, filters)) throw notFound(cronId);
    return rows[0];
  }

  async update(cronId: string, patch: CronPatch, auth: AuthContext) {
    const [filters] = await handleAuthEvent(auth, 'crons:update', {
      cron_id: cronId,
      payload: runPayload(patch),
      schedule: patch.schedule,
      end_time: patch.end_time,
    });
    return inTransaction(this.db, async (tx) => {
      const row = await this.visible(tx, cronId, filters);
      const metadata = patch.metadata !== undefined ? { ...row.metadata, ...patch.metadata } : row.metadata;
      const payload = { ...row.payload, ...runPayload(patch), metadata };
      const schedule = {
        schedule: patch.schedule ?? row.schedule,
        timezone: patch.timezone !== undefined ? patch.timezone : row.timezone,
        end_time: patch.end_time !== undefined ? patch.end_time : row.end_time,
        enabled: patch.enabled ?? row.enabled,
      };
      const { rows } = await tx.query(
        `UPDATE slipway_agent_crons SET schedule = $2, timezone = $3, end_time = $4, enabled = $5, payload = $6, metadata = $7,
                on_run_completed = CASE WHEN thread_id IS NULL THEN coalesce($8, on_run_completed) END, ` +
          `next_run_date = $9, updated_at = now()
          WHERE cron_id = $1 RETURNING *`,
        [
          cronId,
          schedule.schedule,
          schedule.timezone,
          schedule.end_time,
          schedule.enabled,
          json(payload),
          json(metadata),
          patch.on_run_completed ?? null,
          PgCrons.due(schedule, new Date()),
        ],
      );
      return toCron(rows[0]);
    });
  }

  async delete(cronId: string, auth: AuthContext): Promise<void> {
    const [filters] = await handleAuthEvent(auth, 'crons:delete', { cron_id: cronId });
    await inTransaction(this.db, async (tx) => {
      await this.visible(tx, cronId, filters);
      await tx.query('DELETE FROM slipway_agent_crons WHERE cron_id = $1', [cronId]);
    });
  }

  /**
   * One scheduler pass: claims the due crons no other instance holds, moves each one's
   * next_run_date past now (by the database's clock: one clock for every instance) and creates
   * its run, all in one transaction. Returns the number of runs created.
   */
  async fireDue(): Promise<number> {
    const created: Array<{ run: Run; inflight: Run[]; strategy: string }> = [];
    await inTransaction(this.db, async (tx) => {
      const { rows } = await tx.query(
        `SELECT *, now() AS db_now FROM slipway_agent_crons WHERE enabled AND next_run_date <= now()
          ORDER BY next_run_date LIMIT ${FIRE_BATCH} FOR UPDATE SKIP LOCKED`,
      );
      for (const row of rows) {
        let next: Date | null = null;
        let parsed = true;
        try {
          next = PgCrons.due(row, row.db_now);
        } catch (err) {
          parsed = false;
          logger.warn('A cron schedule no longer parses: disabled', { cron_id: row.cron_id, error: String(err) });
        }
        // No next date (past its end time): it stays, but is never due again.
        await tx.query(
          'UPDATE slipway_agent_crons SET next_run_date = $2, enabled = enabled AND $3 WHERE cron_id = $1',
          [row.cron_id, next, parsed],
        );
        if (row.end_time != null && new Date(row.end_time) < row.db_now) continue;
        await tx.query('SAVEPOINT fire');
        try {
          const [run, ...inflight] = await this.createRun(tx, row);
          await tx.query('RELEASE SAVEPOINT fire');
          if (run) created.push({ run, inflight, strategy: row.payload?.multitask_strategy ?? 'reject' });
        } catch (err) {
          await tx.query('ROLLBACK TO SAVEPOINT fire');
          logger.warn('A cron tick could not create its run', { cron_id: row.cron_id, error: String(err) });
        }
      }
    });
    for (const { run, inflight, strategy } of created) {
      logger.info('Cron created a run', {
        run_id: run.run_id,
        thread_id: run.thread_id,
        cron_id: run.metadata?.cron_id,
      });
      if ((strategy === 'interrupt' || strategy === 'rollback') && inflight.length) {
        await this.runs
          .cancel(
            run.thread_id,
            inflight.map((r) => r.run_id),
            { action: strategy },
            undefined,
          )
          .catch(() => {});
      }
    }
    if (created.length) await this.streams.wake();
    return created.length;
  }

  /** The run of one tick, as POST /runs (stateless) or /threads/{id}/runs would create it. */
  private async createRun(tx: Tx, row: any): Promise<Run[]> {
    const p = row.payload ?? {};
    const runId = uuid7();
    const streamMode =
      p.stream_mode == null ? ['values'] : Array.isArray(p.stream_mode) ? p.stream_mode : [p.stream_mode];
    const config = { ...p.config, configurable: { ...p.config?.configurable } };
    applyAuthToRunConfig(config, row.auth ?? undefined);
    const kwargs = {
      input: p.input,
      command: undefined,
      config,
      context: p.context,
      stream_mode: streamMode.length ? streamMode : ['values'],
      interrupt_before: p.interrupt_before,
      interrupt_after: p.interrupt_after,
      webhook: p.webhook,
      feedback_keys: undefined,
      temporary: row.thread_id == null && (row.on_run_completed ?? 'delete') === 'delete',
      subgraphs: p.stream_subgraphs ?? false,
      resumable: p.stream_resumable ?? false,
    } as RunKwargs;
    const multitaskStrategy = p.multitask_strategy ?? 'reject';
    const metadata = { ...p.metadata, cron_id: row.cron_id };
    const runs = await this.runs.insert(
      tx,
      runId,
      row.assistant_id,
      kwargs,
      {
        threadId: row.thread_id ?? undefined,
        userId: row.user_id ?? undefined,
        metadata,
        status: 'pending',
        multitaskStrategy,
        preventInsertInInflight: multitaskStrategy === 'reject',
      },
      undefined,
      metadata,
    );
    if (runs[0]?.run_id !== runId) {
      logger.info('A cron tick found its thread busy and made no run (multitask_strategy reject)', {
        cron_id: row.cron_id,
        thread_id: row.thread_id,
      });
      return [];
    }
    return runs;
  }
}
