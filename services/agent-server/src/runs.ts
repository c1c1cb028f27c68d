// Runs, one row each (LangGraph Server API: /runs, /threads/{id}/runs): created here, executed by
// whichever instance's worker claims them (queue.ts), their events read from Redis (streams.ts).
import type { Run, RunKwargs, RunsRepo, RunsStreamRepo } from '@langchain/langgraph-api/storage';
import { v7 as uuid7 } from '@langchain/core/utils/uuid';
import { HTTPException } from 'hono/http-exception';
import { inTransaction, type Db, type Tx } from './db.js';
import { deleteRolledBack, type RunQueue } from './queue.js';
import { json, RUN_COLUMNS, toRun, Where } from './rows.js';
import type { RunStreams } from './streams.js';
import { checkpointer, handleAuthEvent, isAuthMatching, logger, serializeError, type AuthContext } from './upstream.js';

type PutOptions = Parameters<RunsRepo['put']>[3];

export class PgRuns implements RunsRepo {
  readonly stream: RunsStreamRepo;

  constructor(
    private readonly db: Db,
    private readonly queue: RunQueue,
    private readonly streams: RunStreams,
  ) {
    this.stream = new PgRunStream(this, streams, queue);
  }

  /**
   * Claims one run for a worker of this instance (waiting up to 2 s for one, or a wake-up);
   * releases it when the worker is done with it. Never throws: the server's worker loop would end.
   */
  async *next() {
    let claimed: Awaited<ReturnType<RunQueue['claim']>> = null;
    try {
      claimed = await this.queue.claim();
      if (!claimed) {
        await this.streams.idle(2_000);
        claimed = await this.queue.claim();
      }
    } catch (err) {
      logger.warn('Could not claim a run', { error: String(err) });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    if (!claimed) return;
    try {
      yield claimed;
    } finally {
      await this.queue
        .finish(claimed.run.run_id)
        .catch((err) => logger.warn('Could not release a run', { run_id: claimed!.run.run_id, error: String(err) }));
    }
  }

  async put(
    runId: string,
    assistantId: string,
    kwargs: RunKwargs,
    options: PutOptions,
    auth: AuthContext,
  ): Promise<Run[]> {
    const multitaskStrategy = options?.multitaskStrategy ?? 'reject';
    const status = options?.status ?? 'pending';
    const threadId = options?.threadId;
    const [filters, mutable] = await handleAuthEvent(auth, 'threads:create_run', {
      thread_id: threadId,
      assistant_id: assistantId,
      run_id: runId,
      status,
      metadata: options?.metadata ?? {},
      prevent_insert_if_inflight: options?.preventInsertInInflight,
      multitask_strategy: multitaskStrategy,
      if_not_exists: options?.ifNotExists ?? 'reject',
      after_seconds: options?.afterSeconds ?? 0,
      kwargs,
    });
    const result = await inTransaction(this.db, (tx) =>
      this.insert(tx, runId, assistantId, kwargs, options, filters, mutable.metadata ?? {}),
    );
    if (result[0]?.run_id === runId && status === 'pending') await this.streams.wake();
    return result;
  }

  /**
   * Inserts a run (and its thread, when it is new) in `tx`; the caller wakes the workers after its
   * commit. Returns [the run, ...runs in flight on its thread], or the runs in flight alone when
   * `preventInsertInInflight` held it back, or [] when the thread does not exist.
   */
  async insert(
    tx: Tx,
    runId: string,
    assistantId: string,
    kwargs: RunKwargs,
    options: PutOptions,
    filters: Record<string, unknown> | undefined,
    metadata: Record<string, unknown>,
  ): Promise<Run[]> {
    const multitaskStrategy = options?.multitaskStrategy ?? 'reject';
    const status = options?.status ?? 'pending';
    let threadId = options?.threadId;
    const { rows: found } = await tx.query('SELECT * FROM slipway_agent_assistants WHERE assistant_id = $1', [
      assistantId,
    ]);
    const assistant = found[0];
    if (!assistant) {
      throw new HTTPException(404, {
        message: `No assistant found for "${assistantId}". Make sure the assistant ID is for a valid assistant or a valid graph ID.`,
      });
    }
    const config = kwargs.config ?? {};
    const existing = threadId
      ? (await tx.query('SELECT * FROM slipway_agent_threads WHERE thread_id = $1 FOR UPDATE', [threadId])).rows[0]
      : undefined;
    if (existing && !isAuthMatching(existing.metadata, filters)) throw new HTTPException(404);
    const link = { graph_id: assistant.graph_id, assistant_id: assistantId };
    if (!existing && (threadId == null || options?.ifNotExists === 'create')) {
      threadId ??= uuid7();
      const threadConfig = {
        ...assistant.config,
        ...config,
        configurable: { ...assistant.config?.configurable, ...config.configurable },
      };
      await tx.query(
        `INSERT INTO slipway_agent_threads (thread_id, status, metadata, config) VALUES ($1, 'busy', $2, $3)`,
        [threadId, json({ ...link, ...metadata }), json(threadConfig)],
      );
    } else if (existing) {
      if (existing.status !== 'busy') {
        const threadConfig = {
          ...assistant.config,
          ...existing.config,
          ...config,
          configurable: { ...assistant.config?.configurable, ...existing.config?.configurable, ...config.configurable },
        };
        await tx.query(
          `UPDATE slipway_agent_threads SET status = 'busy', metadata = metadata || $2::jsonb, config = $3, ` +
            `updated_at = now() WHERE thread_id = $1`,
          [threadId, json(link), json(threadConfig)],
        );
      }
    } else {
      return [];
    }
    const inflight = (
      await tx.query(
        `SELECT ${RUN_COLUMNS} FROM slipway_agent_runs WHERE thread_id = $1 AND status IN ('pending', 'running')`,
        [threadId],
      )
    ).rows.map(toRun);
    if (options?.preventInsertInInflight && inflight.length) return inflight;
    const configurable = {
      ...assistant.config?.configurable,
      ...existing?.config?.configurable,
      ...config.configurable,
      run_id: runId,
      thread_id: threadId,
      graph_id: assistant.graph_id,
      assistant_id: assistantId,
      user_id:
        config.configurable?.user_id ??
        existing?.config?.configurable?.user_id ??
        assistant.config?.configurable?.user_id ??
        options?.userId,
    };
    const mergedMetadata = { ...assistant.metadata, ...existing?.metadata, ...metadata };
    const runKwargs = {
      ...kwargs,
      config: { ...assistant.config, ...config, configurable, metadata: mergedMetadata },
      context:
        typeof assistant.context !== 'object' && assistant.context != null
          ? (assistant.context ?? kwargs.context)
          : { ...assistant.context, ...(kwargs.context as object) },
    };
    const { rows } = await tx.query(
      `INSERT INTO slipway_agent_runs (run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, created_at, code)
       VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8), $9) RETURNING ${RUN_COLUMNS}`,
      [
        runId,
        threadId,
        assistantId,
        status,
        json(mergedMetadata),
        json(runKwargs),
        multitaskStrategy,
        options?.afterSeconds ?? 0,
        this.queue.code,
      ],
    );
    return [toRun(rows[0]), ...inflight];
  }

  /** The run, if the auth filters let the caller see its thread. */
  private async visible(
    runId: string,
    threadId: string | undefined,
    filters: Record<string, unknown> | undefined,
    db: Pick<Tx, 'query'> = this.db,
    lock = '',
  ) {
    const where = new Where().add('r.run_id = ?', runId);
    if (threadId != null) where.add('r.thread_id = ?', threadId);
    const { rows } = await db.query(
      `SELECT ${RUN_COLUMNS.split(', ')
        .map((c) => `r.${c}`)
        .join(', ')}, r.lease_expires_at < now() AS lapsed, t.metadata AS thread_metadata
         FROM slipway_agent_runs r JOIN slipway_agent_threads t USING (thread_id) ${where} ${lock}`,
      where.params,
    );
    if (!rows.length || (filters != null && !isAuthMatching(rows[0].thread_metadata, filters))) return undefined;
    return { run: toRun(rows[0]), lapsed: rows[0].lapsed === true };
  }

  async get(runId: string, threadId: string | undefined, auth: AuthContext): Promise<Run | null> {
    const [filters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
    return (await this.visible(runId, threadId, filters))?.run ?? null;
  }

  async delete(runId: string, threadId: string | undefined, auth: AuthContext): Promise<string | null> {
    const [filters] = await handleAuthEvent(auth, 'threads:delete', { run_id: runId, thread_id: threadId });
    const found = await this.visible(runId, threadId, filters);
    if (!found) throw new HTTPException(404, { message: 'Run not found' });
    if (threadId != null) await checkpointer.delete(threadId, runId);
    await this.db.query('DELETE FROM slipway_agent_runs WHERE run_id = $1', [runId]);
    return runId;
  }

  async wait(runId: string, threadId: string | undefined, auth: AuthContext): Promise<unknown> {
    let last: unknown = null;
    for await (const { event, data } of this.stream.join(
      runId,
      threadId,
      { ignore404: threadId == null, lastEventId: undefined },
      auth,
    )) {
      if (event === 'values') last = data;
      else if (event === 'error') last = { __error__: serializeError(data) };
    }
    return last;
  }

  async join(runId: string, threadId: string, auth: AuthContext): Promise<unknown> {
    const [filters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
    const visible = await this.db.query('SELECT metadata FROM slipway_agent_threads WHERE thread_id = $1', [threadId]);
    if (!visible.rows.length || !isAuthMatching(visible.rows[0].metadata, filters))
      throw new HTTPException(404, { message: `Thread with ID ${threadId} not found` });
    const last = await this.wait(runId, threadId, auth);
    if (last != null) return last;
    const { rows } = await this.db.query('SELECT "values" FROM slipway_agent_threads WHERE thread_id = $1', [threadId]);
    return rows[0]?.values ?? null;
  }

  /**
   * Pending runs end `interrupted` here (or are deleted with their checkpoints, for a rollback);
   * running ones are asked to stop on whichever instance runs them (whose worker deletes them, for
   * a rollback: queue.ts), or end here when their lease already lapsed.
   */
  async cancel(
    threadId: string | undefined,
    runIds: string[],
    options: { action?: 'interrupt' | 'rollback' },
    auth: AuthContext,
  ): Promise<void> {
    const action = options.action ?? 'interrupt';
    const [filters] = await handleAuthEvent(auth, 'threads:update', {
      thread_id: threadId,
      action,
      metadata: { run_ids: runIds, status: 'pending' },
    });
    const ended: string[] = [];
    const signalled: string[] = [];
    await inTransaction(this.db, async (tx) => {
      const hits = [];
      for (const runId of runIds) {
        const hit = await this.visible(runId, threadId, filters, tx, 'FOR UPDATE OF r');
        if (hit) hits.push(hit);
      }
      if (hits.length !== runIds.length) throw new HTTPException(404, { message: 'Run not found' });
      for (const { run, lapsed } of hits) {
        const stopped = run.status === 'pending' || (run.status === 'running' && lapsed);
        if (stopped && action === 'rollback') {
          await deleteRolledBack(tx, run.thread_id, run.run_id);
          ended.push(run.run_id);
        } else if (stopped) {
          await tx.query(
            `UPDATE slipway_agent_runs SET status = 'interrupted', lease_token = NULL, lease_expires_at = NULL, ` +
              `updated_at = now() WHERE run_id = $1`,
            [run.run_id],
          );
          await tx.query(`UPDATE slipway_agent_threads SET status = 'idle', updated_at = now() WHERE thread_id = $1`, [
            run.thread_id,
          ]);
          ended.push(run.run_id);
        } else if (run.status === 'running') {
          signalled.push(run.run_id);
        } else {
          logger.warn('Attempted to cancel a run that is over', { run_id: run.run_id, status: run.status });
        }
      }
    });
    for (const runId of ended) await this.streams.end(runId);
    for (const runId of signalled) {
      this.queue.abort(runId, action); // this instance's own run: at once
      await this.streams.cancel(runId, action);
    }
    logger.info('Cancelled runs', { run_ids: runIds, thread_id: threadId, action });
  }

  async search(threadId: string, options: Parameters<RunsRepo['search']>[1], auth: AuthContext): Promise<Run[]> {
    const [filters] = await handleAuthEvent(auth, 'threads:search', {
      thread_id: threadId,
      metadata: options.metadata,
      status: options.status,
    });
    const where = new Where()
      .add('r.thread_id = ?', threadId)
      .contains('r.metadata', options.metadata)
      .auth('t.metadata', filters);
    if (options.status != null) where.add('r.status = ?', options.status);
    const { rows } = await this.db.query(
      `SELECT ${RUN_COLUMNS.split(', ')
        .map((c) => `r.${c}`)
        .join(', ')} FROM slipway_agent_runs r JOIN slipway_agent_threads t USING (thread_id) ${where}
        ORDER BY r.created_at DESC, r.run_id DESC LIMIT ${where.param(options.limit ?? 10)} OFFSET ${where.param(options.offset ?? 0)}`,
      where.params,
    );
    return rows.map(toRun);
  }

  /**
   * The worker's status write: fenced by the run's lease. A failure is logged, not thrown (it
   * would end the server's worker loop): the lease then lapses and the run moves.
   */
  async setStatus(runId: string, status: Run['status']): Promise<void> {
    try {
      if (!(await this.queue.setStatus(runId, status)))
        logger.warn('Refused a status write of a run this instance no longer holds', { run_id: runId, status });
    } catch (err) {
      logger.warn('Could not write a run status', { run_id: runId, status, error: String(err) });
    }
  }

  /** Whether the run may still produce events (pending or running); null when it does not exist. */
  async active(runId: string, threadId: string | undefined): Promise<boolean | null> {
    const { rows } = await this.db.query(
      `SELECT status FROM slipway_agent_runs WHERE run_id = $1 AND ($2::text IS NULL OR thread_id = $2)`,
      [runId, threadId ?? null],
    );
    if (!rows.length) return null;
    return rows[0].status === 'pending' || rows[0].status === 'running';
  }
}

class PgRunStream implements RunsStreamRepo {
  constructor(
    private readonly runs: PgRuns,
    private readonly streams: RunStreams,
    private readonly queue: RunQueue,
  ) {}

  async *join(
    runId: string,
    threadId: string | undefined,
    options: Parameters<RunsStreamRepo['join']>[2],
    auth: AuthContext,
  ) {
    const [filters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
    if (filters != null && threadId != null) {
      const run = await this.runs.get(runId, threadId, auth);
      if (run == null) {
        yield { event: 'error', data: { error: 'Error', message: '404: Thread not found' } };
        return;
      }
    }
    let missing = false;
    let yielded = false;
    const active = async () => {
      const state = await this.runs.active(runId, threadId);
      missing = state === null;
      return state === true;
    };
    for await (const event of this.streams.read(runId, options.lastEventId, active, options.signal)) {
      yielded = true;
      yield event;
    }
    if (missing && !yielded && !options.ignore404) yield { event: 'error', data: 'Run not found' };
    if (options.signal?.aborted && options.cancelOnDisconnect && threadId != null) {
      await this.runs.cancel(threadId, [runId], { action: 'interrupt' }, auth);
    }
  }

  /** A worker's event: dropped when the run's lease is no longer this instance's. */
  async publish(payload: { runId: string; event: string; data: unknown; normalized?: boolean }): Promise<void> {
    if (!this.queue.allowed(payload.runId)) return;
    try {
      await this.streams.publish(payload.runId, payload.event, json(payload.data) ?? 'null', payload.normalized);
    } catch (err) {
      // Redis unreachable: the run goes on (its state is in its checkpoints); joiners miss the event.
      logger.warn('Could not publish a run event', { run_id: payload.runId, event: payload.event, error: String(err) });
    }
  }
}
