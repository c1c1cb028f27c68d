import type { Db } from './db.js';
import { json, threadStatusAfterRun } from './rows.js';
import type { RunStats } from './run-stats.js';
import type { RunStreams } from './streams.js';
import { logger } from './upstream.js';

/** How many leases a run may let lapse: the next lapse ends it `error` and its thread takes runs again. */
export const MAX_ATTEMPTS = 3;

/**
 * The sweeper every instance runs (RunQueue.start): runs whose lease lapsed, whichever instance
 * held them (it died or froze), go back to the queue, or end `error` once they used up their
 * attempts. It reads no lease of its own, so it works the same on an API-only instance.
 */
export class LeaseSweeper {
  constructor(
    private readonly db: Db,
    private readonly streams: RunStreams,
    /** Counts for the platform's run metrics (run-stats.ts). */
    private readonly stats: Pick<RunStats, 'ended'>,
  ) {}

  /** Requeues runs whose lease lapsed (or ends them `error` after MAX_ATTEMPTS claims). */
  async sweep(): Promise<void> {
    const { rows } = await this.db.query(
      `UPDATE slipway_agent_runs r SET status = CASE WHEN r.attempt >= $1 THEN 'error' ELSE 'pending' END, attempt = r.attempt + 1,
              worker = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
        WHERE r.run_id IN (SELECT run_id FROM slipway_agent_runs WHERE status = 'running' ` +
        `AND lease_expires_at < now() FOR UPDATE SKIP LOCKED)
        RETURNING r.run_id, r.thread_id, r.status, r.attempt`,
      [MAX_ATTEMPTS],
    );
    if (!rows.length) return;
    for (const row of rows) {
      logger.warn(
        row.status === 'pending'
          ? 'Requeued a run whose lease lapsed'
          : 'A run whose lease lapsed used up its attempts',
        { run_id: row.run_id, attempt: row.attempt },
      );
      if (row.status !== 'error') continue;
      void this.stats.ended('error', null);
      await this.failed(row.run_id, row.thread_id, `Run ${row.run_id} exceeded max attempts`);
    }
    if (rows.some((r: { status: string }) => r.status === 'pending')) await this.streams.wake();
  }

  /** A run that ends `error` outside a worker: its thread too, and its joiners hear why. */
  private async failed(runId: string, threadId: string, message: string): Promise<void> {
    await this.db.query(
      `UPDATE slipway_agent_threads SET status = ${threadStatusAfterRun('$1', `'error'`)},
              updated_at = now() WHERE thread_id = $1`,
      [threadId],
    );
    await this.streams.publish(runId, 'error', json({ error: 'Error', message })!);
    await this.streams.end(runId);
  }
}
