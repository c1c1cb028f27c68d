// Threads, one row each (LangGraph Server API: /threads); their state and history live in the
// checkpointer (thread-state.ts).
import type { CheckpointPayload, Thread, ThreadsRepo } from '@langchain/langgraph-api/storage';
import { v7 as uuid7 } from '@langchain/core/utils/uuid';
import { HTTPException } from 'hono/http-exception';
import { inTransaction, type Db } from './db.js';
import { json, orderBy, threadStatusAfterRun, toThread, Where } from './rows.js';
import { PgThreadState } from './thread-state.js';
import { checkpointer, handleAuthEvent, isAuthMatching, type AuthContext } from './upstream.js';

const SORTS = ['thread_id', 'status', 'created_at', 'updated_at'] as const;
type SearchOptions = Parameters<ThreadsRepo['search']>[0];

export class PgThreads implements ThreadsRepo {
  readonly state: PgThreadState;

  constructor(private readonly db: Db) {
    this.state = new PgThreadState(db, this);
  }

  private searchWhere(
    options: Pick<SearchOptions, 'metadata' | 'values' | 'status' | 'ids'>,
    filters: Record<string, unknown> | undefined,
  ): Where {
    const where = new Where();
    if (options.ids?.length) where.add('thread_id = ANY(?::text[])', options.ids);
    if (options.status != null) where.add('status = ?', options.status);
    // As the in-memory server: a thread without values yet matches any values filter.
    if (options.values != null && Object.keys(options.values).length)
      where.add(`("values" IS NULL OR "values" @> ?::jsonb)`, json(options.values));
    return where.contains('metadata', options.metadata).auth('metadata', filters);
  }

  async *search(options: SearchOptions, auth: AuthContext) {
    const [filters] = await handleAuthEvent(auth, 'threads:search', {
      metadata: options.metadata,
      ids: options.ids,
      status: options.status,
      values: options.values,
      limit: options.limit,
      offset: options.offset,
    });
    const where = this.searchWhere(options, filters);
    const { rows } = await this.db.query(
      `SELECT * FROM slipway_agent_threads ${where}
       ${orderBy(options.sort_by, SORTS, 'created_at', options.sort_order, 'thread_id')}
       LIMIT ${where.param(options.limit)} OFFSET ${where.param(options.offset)}`,
      where.params,
    );
    // The page's size, as the server's pagination headers read it (a full page: there may be more).
    // Never a count of every match: a search costs its page, whatever the number of records.
    const total = rows.length;
    for (const row of rows) yield { thread: toThread(row), total };
  }

  async count(options: Parameters<ThreadsRepo['count']>[0], auth: AuthContext): Promise<number> {
    const [filters] = await handleAuthEvent(auth, 'threads:search', { ...options, limit: 0, offset: 0 });
    const where = this.searchWhere(options, filters);
    const { rows } = await this.db.query(`SELECT count(*)::int AS n FROM slipway_agent_threads ${where}`, where.params);
    return rows[0].n;
  }

  /** The thread if it exists and the auth filters let the caller see it. */
  async visible(
    threadId: string,
    filters: Record<string, unknown> | undefined,
    db: Pick<Db, 'query'> = this.db,
    lock = '',
  ): Promise<Thread | undefined> {
    const { rows } = await db.query(`SELECT * FROM slipway_agent_threads WHERE thread_id = $1 ${lock}`, [threadId]);
    return rows.length && isAuthMatching(rows[0].metadata, filters) ? toThread(rows[0]) : undefined;
  }

  async get(threadId: string, auth: AuthContext): Promise<Thread> {
    const [filters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
    const thread = await this.visible(threadId, filters);
    if (!thread) throw new HTTPException(404, { message: `Thread with ID ${threadId} not found` });
    return thread;
  }

  async put(threadId: string, options: Parameters<ThreadsRepo['put']>[1], auth: AuthContext): Promise<Thread> {
    const [filters, mutable] = await handleAuthEvent(auth, 'threads:create', {
      thread_id: threadId,
      metadata: options.metadata,
      if_exists: options.if_exists,
    });
    const { rows } = await this.db.query(
      `INSERT INTO slipway_agent_threads (thread_id, metadata) VALUES ($1, $2) ON CONFLICT (thread_id) DO NOTHING RETURNING *`,
      [threadId, json(mutable?.metadata ?? {})],
    );
    if (rows.length) return toThread(rows[0]);
    const existing = await this.visible(threadId, filters);
    if (!existing || options.if_exists === 'raise') throw new HTTPException(409, { message: 'Thread already exists' });
    return existing;
  }

  async patch(threadId: string, options: Parameters<ThreadsRepo['patch']>[1], auth: AuthContext): Promise<Thread> {
    const [filters, mutable] = await handleAuthEvent(auth, 'threads:update', {
      thread_id: threadId,
      metadata: options.metadata,
    });
    return inTransaction(this.db, async (tx) => {
      if (!(await this.visible(threadId, filters, tx, 'FOR UPDATE')))
        throw new HTTPException(404, { message: 'Thread not found' });
      const { rows } = await tx.query(
        `UPDATE slipway_agent_threads SET metadata = metadata || coalesce($2::jsonb, '{}'), updated_at = now() ` +
          `WHERE thread_id = $1 RETURNING *`,
        [threadId, json(mutable?.metadata ?? null)],
      );
      return toThread(rows[0]);
    });
  }

  /** After a run: idle, interrupted (a next node waits), error, or busy while runs are pending. */
  async setStatus(
    threadId: string,
    options: { checkpoint?: CheckpointPayload; exception?: Error },
    db: Pick<Db, 'query'> = this.db,
  ): Promise<void> {
    const { checkpoint, exception } = options;
    const interrupts = checkpoint
      ? Object.fromEntries(checkpoint.tasks.filter((task) => task.interrupts).map((task) => [task.id, task.interrupts]))
      : null;
    const fixed = exception != null ? 'error' : checkpoint && checkpoint.next.length > 0 ? 'interrupted' : null;
    const { rowCount } = await db.query(
      `UPDATE slipway_agent_threads SET updated_at = now(), "values" = $3, interrupts = $4,
              status = coalesce($2, ${threadStatusAfterRun('$1')})
        WHERE thread_id = $1`,
      [threadId, fixed, json(checkpoint?.values ?? null), json(interrupts)],
    );
    if (!rowCount) throw new HTTPException(404, { message: 'Thread not found' });
  }

  /** Sets the values of the thread's latest state (after an update through the state API). */
  async setValues(threadId: string, values: unknown): Promise<void> {
    await this.db.query(`UPDATE slipway_agent_threads SET "values" = $2 WHERE thread_id = $1`, [
      threadId,
      json(values),
    ]);
  }

  async delete(threadId: string, auth: AuthContext): Promise<string[]> {
    const [filters] = await handleAuthEvent(auth, 'threads:delete', { thread_id: threadId });
    await inTransaction(this.db, async (tx) => {
      if (!(await this.visible(threadId, filters, tx, 'FOR UPDATE')))
        throw new HTTPException(404, { message: `Thread with ID ${threadId} not found` });
      await tx.query('DELETE FROM slipway_agent_threads WHERE thread_id = $1', [threadId]); // its runs go with it (ON DELETE CASCADE)
    });
    await checkpointer.delete(threadId, null);
    return [threadId];
  }

  async copy(threadId: string, auth: AuthContext): Promise<Thread> {
    const [filters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
    const from = await this.visible(threadId, filters);
    if (!from) throw new HTTPException(409, { message: 'Thread not found' });
    const newThreadId = uuid7();
    const metadata = { ...from.metadata, thread_id: newThreadId };
    await handleAuthEvent(auth, 'threads:create', { thread_id: newThreadId, metadata });
    const { rows } = await this.db.query(
      `INSERT INTO slipway_agent_threads (thread_id, metadata) VALUES ($1, $2) RETURNING *`,
      [newThreadId, json(metadata)],
    );
    await checkpointer.copy(threadId, newThreadId);
    return toThread(rows[0]);
  }
}
