// The storage the host gives the published server (startServer's `ops`): assistants, threads and
// runs in the deployment database, run events and cancellations through its Redis.
import type { Ops } from '@langchain/langgraph-api/storage';
import { PgAssistants } from './assistants.js';
import type { Db } from './db.js';
import type { RunQueue } from './queue.js';
import { PgRuns } from './runs.js';
import type { RunStreams } from './streams.js';
import { PgThreads } from './threads.js';
import { logger } from './upstream.js';

export function createOps(db: Db, queue: RunQueue, streams: RunStreams): Ops {
  const assistants = new PgAssistants(db);
  const threads = new PgThreads(db);
  const runs = new PgRuns(db, queue, streams);
  // A worker writes its thread's status after its run: only while it still holds the run's lease,
  // and not after a rollback (the run's deletion left the thread as it was before the run).
  const setStatus = threads.setStatus.bind(threads);
  threads.setStatus = async (threadId, options) => {
    const lease = queue.leaseOfThread(threadId);
    if (lease?.rolledBack) return;
    if (lease && !lease.allowed) {
      logger.warn('Refused a thread status write of a run this instance no longer holds', {
        run_id: lease.runId,
        thread_id: threadId,
      });
      return;
    }
    // With the run's final status, in one transaction. Logged, not thrown: it would end the
    // server's worker loop (and `finish` still writes the run's status, and its thread's).
    const write = lease
      ? queue.writeEnd(lease.runId, (tx) => setStatus(threadId, options, tx))
      : setStatus(threadId, options);
    await write.catch((err) =>
      logger.warn('Could not write a thread status', { thread_id: threadId, error: String(err) }),
    );
  };
  // A run without a thread ends with its temporary thread's deletion, which takes the run's row
  // with it: its final status is written (and counted) first.
  const remove = threads.delete.bind(threads);
  threads.delete = async (threadId, auth) => {
    const lease = queue.leaseOfThread(threadId);
    if (lease)
      await queue
        .writeEnd(lease.runId)
        .catch((err) => logger.warn('Could not write a run status', { run_id: lease.runId, error: String(err) }));
    return remove(threadId, auth);
  };
  return {
    assistants,
    threads,
    runs,
    // POST /internal/truncate would wipe every record of the deployment: not through this server.
    truncate: async () => {},
  };
}
