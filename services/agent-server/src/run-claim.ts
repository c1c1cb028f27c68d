import type { Run } from '@langchain/langgraph-api/storage';
import { isUniqueViolation, type Db } from './db.js';
import { RUN_COLUMNS } from './rows.js';
import { logger } from './upstream.js';

/** Who claims (RunQueue's options): the lease is this instance's, for `leaseMs`. */
export interface Claimant {
  instanceId: string;
  code: string;
  leaseMs: number;
}

/**
 * Takes the oldest runnable run for `claimant` under `token`, or null when there is none: a
 * pending run whose thread runs nothing, made through this code, through code no live instance
 * serves, or before codes were recorded. The row comes back with its `attempt`.
 */
export async function claimOldestRun(db: Db, claimant: Claimant, token: string): Promise<any | null> {
  try {
    const { rows } = await db.query(
      `UPDATE slipway_agent_runs SET status = 'running', worker = $1, lease_token = $2,
            lease_expires_at = now() + make_interval(secs => $3::double precision / 1000), updated_at = now()
      WHERE run_id = (SELECT r.run_id FROM slipway_agent_runs r
                       WHERE r.status = 'pending' AND r.created_at <= now()
                         AND NOT EXISTS (SELECT 1 FROM slipway_agent_runs x WHERE x.thread_id = r.thread_id AND x.status = 'running')
                         AND (r.code IS NULL OR r.code = $4 OR NOT EXISTS (
                               SELECT 1 FROM slipway_agent_instances i
                                WHERE i.code = r.code AND NOT i.draining
                                  AND i.seen_at > now() - make_interval(secs => $3::double precision / 1000)))
                       ORDER BY r.created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING ${RUN_COLUMNS}, attempt`,
      [claimant.instanceId, token, claimant.leaseMs, claimant.code],
    );
    return rows[0] ?? null;
  } catch (err) {
    if (isUniqueViolation(err, 'slipway_agent_runs_one_running')) return null; // another worker took a run of that thread first
    throw err;
  }
}

/**
 * A run claimed again (its instance died, froze or drained): when it had written a checkpoint, it continues
 * from the thread's latest one (no input: the graph resumes the steps that did not finish)
 * instead of starting over with its input.
 */
export async function resumeFromCheckpoint(db: Db, run: Run): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM checkpoints WHERE thread_id = $1 AND checkpoint_ns = '' AND metadata->>'run_id' = $2 LIMIT 1`,
    [run.thread_id, run.run_id],
  );
  if (!rows.length) return false;
  run.kwargs = { ...run.kwargs, input: null, command: undefined };
  const configurable = { ...run.kwargs.config?.configurable };
  delete configurable.checkpoint_id;
  run.kwargs.config = { ...run.kwargs.config, configurable };
  logger.info('Resuming run from its last checkpoint', { run_id: run.run_id, thread_id: run.thread_id });
  return true;
}
