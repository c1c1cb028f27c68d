// Time-to-live sweeps configured in langgraph.json, as the LangGraph server reads them:
//   "checkpointer": {"ttl": {"strategy": "delete", "default_ttl": <minutes>, "sweep_interval_minutes": <minutes>}}
//     a thread not updated for default_ttl minutes (and with no run pending or running) is
//     deleted with its runs, crons and checkpoints;
//   "store": {"ttl": {"default_ttl": <minutes>, "refresh_on_read": true, "sweep_interval_minutes": <minutes>}}
//     a store item expires default_ttl minutes after its last write (or read, with
//     refresh_on_read); reads skip expired items at once, the sweep deletes them.
// Each sweep runs on one instance at a time (a transaction-level advisory lock; an instance that
// does not get it skips its turn) and deletes at most a batch per pass, oldest first.
import type { Db } from './db.js';
import { inTransaction } from './db.js';
import { logger } from './upstream.js';

const THREAD_SWEEP_LOCK = 0x534c5454; // "SLTT"
const STORE_SWEEP_LOCK = 0x534c5453; // "SLTS"
/** Records one pass deletes at most. */
export const SWEEP_BATCH = 500;
const DEFAULT_SWEEP_MINUTES = 60;

export interface TtlConfig {
  threads?: { ttlMinutes: number; sweepMs: number };
  store?: { ttlMinutes: number; refreshOnRead: boolean; sweepMs: number };
}

/** Reads `checkpointer.ttl` and `store.ttl` of the graph config; throws naming a bad key. `sweepMs` overrides both intervals. */
export function ttlConfig(graphConfig: { checkpointer?: any; store?: any }, sweepMs?: number): TtlConfig {
  const minutes = (where: string, value: unknown, fallback?: number): number => {
    if (value == null && fallback != null) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      throw new Error(`langgraph.json: ${where} must be a positive number of minutes`);
    return value;
  };
  const out: TtlConfig = {};
  const threads = graphConfig.checkpointer?.ttl;
  if (threads != null && threads.default_ttl != null) {
    if ((threads.strategy ?? 'delete') !== 'delete')
      throw new Error(
        `langgraph.json: checkpointer.ttl.strategy '${threads.strategy}' is not supported (only "delete")`,
      );
    const ttlMinutes = minutes('checkpointer.ttl.default_ttl', threads.default_ttl);
    out.threads = {
      ttlMinutes,
      sweepMs:
        sweepMs ??
        minutes('checkpointer.ttl.sweep_interval_minutes', threads.sweep_interval_minutes, DEFAULT_SWEEP_MINUTES) *
          60_000,
    };
  }
  const store = graphConfig.store?.ttl;
  if (store != null && store.default_ttl != null) {
    const ttlMinutes = minutes('store.ttl.default_ttl', store.default_ttl);
    if (store.refresh_on_read != null && typeof store.refresh_on_read !== 'boolean')
      throw new Error('langgraph.json: store.ttl.refresh_on_read must be true or false');
    out.store = {
      ttlMinutes,
      refreshOnRead: store.refresh_on_read ?? true,
      sweepMs:
        sweepMs ??
        minutes('store.ttl.sweep_interval_minutes', store.sweep_interval_minutes, DEFAULT_SWEEP_MINUTES) * 60_000,
    };
  }
  return out;
}

/** Deletes up to a batch of threads idle past `ttlMinutes`, with their checkpoints; returns how many. */
export function sweepThreads(db: Db, ttlMinutes: number, batch = SWEEP_BATCH): Promise<number> {
  return inTransaction(db, async (tx) => {
    const { rows: lock } = await tx.query('SELECT pg_try_advisory_xact_lock($1) AS got', [THREAD_SWEEP_LOCK]);
    if (!lock[0].got) return 0;
    const { rows } = await tx.query(
      `SELECT thread_id FROM slipway_agent_threads t
        WHERE updated_at < now() - make_interval(secs => $1::double precision * 60) AND status <> 'busy'
          AND NOT EXISTS (SELECT 1 FROM slipway_agent_runs r WHERE r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))
        ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [ttlMinutes, batch],
    );
    if (!rows.length) return 0;
    const ids = rows.map((r: { thread_id: string }) => r.thread_id);
    for (const table of ['checkpoint_writes', 'checkpoint_blobs', 'checkpoints'])
      await tx.query(`DELETE FROM ${table} WHERE thread_id = ANY($1::text[])`, [ids]);
    await tx.query('DELETE FROM slipway_agent_threads WHERE thread_id = ANY($1::text[])', [ids]); // runs and crons cascade
    return ids.length;
  });
}

/** Deletes up to a batch of expired store items; returns how many. */
export function sweepStore(db: Db, batch = SWEEP_BATCH): Promise<number> {
  return inTransaction(db, async (tx) => {
    const { rows: lock } = await tx.query('SELECT pg_try_advisory_xact_lock($1) AS got', [STORE_SWEEP_LOCK]);
    if (!lock[0].got) return 0;
    const { rowCount } = await tx.query(
      `DELETE FROM store WHERE (namespace_path, key) IN (
         SELECT namespace_path, key FROM store WHERE expires_at IS NOT NULL AND expires_at <= now() ` +
        `ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`,
      [batch],
    );
    return rowCount ?? 0;
  });
}

/** Starts the configured sweeps; returns what stops them. */
export function startSweeps(db: Db, config: TtlConfig): () => void {
  const timers: NodeJS.Timeout[] = [];
  const every = (ms: number, what: string, fn: () => Promise<number>) =>
    timers.push(
      setInterval(
        () =>
          void fn().then(
            (n) => n && logger.info(`TTL sweep deleted ${n} expired ${what}`),
            (err) => logger.warn(`TTL sweep of ${what} failed`, { error: String(err) }),
          ),
        ms,
      ),
    );
  if (config.threads) every(config.threads.sweepMs, 'threads', () => sweepThreads(db, config.threads!.ttlMinutes));
  if (config.store) every(config.store.sweepMs, 'store items', () => sweepStore(db));
  return () => timers.forEach(clearInterval);
}
