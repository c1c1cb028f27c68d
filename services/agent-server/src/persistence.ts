// Checkpoints and the store: the published server's module singletons, pointed at the deployment
// database (@langchain/langgraph-checkpoint-postgres). A checkpoint write of a run whose lease
// this instance no longer holds is refused (see queue.ts): a worker that froze past its lease must
// not write over the state of the instance that took its run over.
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import { inTransaction, type Db } from './db.js';
import { searchEveryNamespace } from './store-search.js';
import { checkpointer, graphStore } from './upstream.js';

/** Keys of a run's configurable that stay out of checkpoint metadata (as the server's own saver). */
const EXCLUDED_METADATA = ['checkpoint_ns', 'checkpoint_id', 'run_id', 'thread_id'];

export interface Fence {
  holds(runId: string): boolean;
  allowed(runId: string): boolean;
}

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/**
 * The saver shares the host's pool; the store keeps a small one of its own (it takes only pool
 * options). A deployment's database serves every instance, so each takes few connections.
 */
export function createPersistence(db: Db, databaseUri: string, ttl?: { ttlMinutes: number; refreshOnRead: boolean }) {
  // With a TTL, items get an expiry and reads skip expired ones; the sweep is the host's (ttl.ts),
  // bounded and on one instance at a time, so the store's own (unbounded, on every instance) stays off.
  const storeTtl = ttl ? { ttl: { defaultTtl: ttl.ttlMinutes, refreshOnRead: ttl.refreshOnRead } } : {};
  return {
    saver: new PostgresSaver(db),
    store: new PostgresStore({ connectionOptions: { connectionString: databaseUri, max: 2 }, ...storeTtl }),
  };
}

export function wirePersistence(db: Db, saver: PostgresSaver, pgStore: PostgresStore, fence: Fence): void {
  const guard = (config: any) => {
    const runId = config?.configurable?.run_id;
    if (runId && fence.holds(runId) && !fence.allowed(runId))
      throw new LeaseLostError(`Run ${runId} is no longer this instance's: checkpoint write refused`);
  };
  Object.assign(checkpointer, {
    initialize: async () => ({ flush: async () => {} }),
    getTuple: (c: any) => saver.getTuple(c),
    list: (c: any, o: any) => saver.list(c, o),
    putWrites: (c: any, w: any, t: string) => {
      guard(c);
      return saver.putWrites(c, w, t);
    },
    // As the server's own saver does: the run's configurable (run_id, graph_id, user fields)
    // goes into the checkpoint metadata, where history filters (and the queue's resume) look for it.
    put: (c: any, checkpoint: any, metadata: any, versions: any) => {
      guard(c);
      const configurable = Object.entries(c.configurable ?? {}).filter(
        ([k]) => !k.startsWith('__') && !EXCLUDED_METADATA.includes(k),
      );
      return saver.put(
        c,
        checkpoint,
        { ...Object.fromEntries(configurable), run_id: c.configurable?.run_id, ...c.metadata, ...metadata },
        versions,
      );
    },
    getNextVersion: (current: any) => saver.getNextVersion(current),
    deleteThread: (threadId: string) => saver.deleteThread(threadId),
    // A run's checkpoints (a rollback, a deleted run), their pending writes, and the channel values
    // no checkpoint left refers to: the saver writes a value once per (channel, version) and keeps
    // the first, so a value of the deleted run left behind would shadow the next run's own.
    delete: async (threadId: string, runId: string | null) => {
      if (runId == null) return saver.deleteThread(threadId);
      await inTransaction(db, async (tx) => {
        await tx.query(
          `DELETE FROM checkpoint_writes w USING checkpoints c
            WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
              AND c.thread_id = $1 AND c.metadata->>'run_id' = $2`,
          [threadId, runId],
        );
        await tx.query(`DELETE FROM checkpoints WHERE thread_id = $1 AND metadata->>'run_id' = $2`, [threadId, runId]);
        await tx.query(
          `DELETE FROM checkpoint_blobs b WHERE b.thread_id = $1 AND NOT EXISTS (
             SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
                AND c.checkpoint->'channel_versions'->>b.channel = b.version)`,
          [threadId],
        );
      });
    },
    copy: (threadId: string, newThreadId: string) =>
      inTransaction(db, async (tx) => {
        await tx.query(
          `INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
           SELECT $2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, ` +
            `replace(metadata::text, $1, $2)::jsonb FROM checkpoints WHERE thread_id = $1`,
          [threadId, newThreadId],
        );
        await tx.query(
          `INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
           SELECT $2, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = $1`,
          [threadId, newThreadId],
        );
        await tx.query(
          `INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
           SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob FROM checkpoint_writes WHERE thread_id = $1`,
          [threadId, newThreadId],
        );
      }),
    // POST /internal/truncate would wipe every thread of the deployment: not through this server.
    clear: () => {},
  });
  Object.assign(graphStore, {
    initialize: async () => ({ flush: async () => {} }),
    // A search with an empty prefix covers every namespace (the Postgres store refuses one).
    batch: async (ops: any[]) => {
      if (!ops.some(isSearchEverywhere)) return pgStore.batch(ops);
      // In order, one at a time: a put before a search in one batch is seen by it.
      const results: unknown[] = [];
      for (const op of ops)
        results.push(isSearchEverywhere(op) ? await searchEveryNamespace(pgStore, op) : (await pgStore.batch([op]))[0]);
      return results;
    },
    get: (...a: any[]) => (pgStore.get as any)(...a),
    search: (prefix: string[], options: any = {}) =>
      prefix.length ? pgStore.search(prefix, options) : searchEveryNamespace(pgStore, options),
    put: (...a: any[]) => (pgStore.put as any)(...a),
    delete: (...a: any[]) => (pgStore.delete as any)(...a),
    listNamespaces: (...a: any[]) => (pgStore.listNamespaces as any)(...a),
    clear: async () => {},
  });
}

/** A batch's search operation with an empty namespace prefix. */
function isSearchEverywhere(op: any): boolean {
  return Array.isArray(op?.namespacePrefix) && op.namespacePrefix.length === 0;
}
