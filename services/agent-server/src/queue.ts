// The run queue: runs wait `pending` in the deployment database and any instance's worker claims
// the oldest (FOR UPDATE SKIP LOCKED; one running run per thread is a unique index). A claim is a
// lease: a token and an expiry the instance renews by heartbeat. Every write the run makes is
// fenced by it: locally (no write once the lease may have lapsed) and, for its status, in the
// database (the token must still be the run's). A sweeper on every instance requeues runs whose
// lease lapsed (their instance died or froze) and they resume from their last checkpoint; a run
// whose lease lapsed MAX_ATTEMPTS times ends `error` and its thread takes runs again. On SIGTERM an
// instance drains: it claims nothing more, lets its runs finish within a grace period and
// requeues the rest (a hand-over, not a failed attempt). While an instance of the code a run was
// created with serves, only such instances claim it: during a rollout, old instances do not take
// the runs made through new ones. With queue workers, only they claim runs: an API-only instance
// creates, streams and cancels them, and sweeps lapsed leases, but claims nothing. A run stopped
// by a rollback (a newer run's `multitask_strategy: "rollback"`, or a cancel with that action) is
// not ended with a status: its worker deletes it and its checkpoints, and the thread is as before it.
// The claim's statement is run-claim.ts, the sweeper lease-sweeper.ts, this instance's row
// instance-presence.ts; the leases this instance holds are RunQueue's.
import { randomUUID } from 'node:crypto';
import type { Run } from '@langchain/langgraph-api/storage';
import type { Db, Tx } from './db.js';
import { inTransaction } from './db.js';
import { InstancePresence } from './instance-presence.js';
import { LeaseSweeper } from './lease-sweeper.js';
import { threadStatusAfterRun, toRun } from './rows.js';
import { claimOldestRun, resumeFromCheckpoint } from './run-claim.js';
import type { RunStats } from './run-stats.js';
import type { CancelAction, RunStreams } from './streams.js';
import { checkpointer, logger } from './upstream.js';

export { MAX_ATTEMPTS } from './lease-sweeper.js';

export interface QueueOptions {
  instanceId: string;
  /** What identifies the code this instance runs (the same for every instance of a revision). */
  code: string;
  /** How long a claim holds without a heartbeat. */
  leaseMs: number;
  /**
   * Whether this instance runs graphs (claims runs). An API-only instance (queue workers run
   * them) claims nothing and is not announced: runs never wait for it.
   */
  claims: boolean;
}

interface Lease {
  runId: string;
  threadId: string;
  token: string;
  /** Local clock: no write after this unless a renewal moved it. */
  expiresAt: number;
  /** Local clock at the claim: the run's duration ends at its final status. */
  claimedAt: number;
  lost: boolean;
  /** Its end is decided (a status, or its deletion after a rollback): no later cancel stops it. */
  ended: boolean;
  /**
   * The status its worker ended it with, until written: with its thread's status, in one
   * transaction (`writeEnd`), so no reader sees the run over while its thread is still busy.
   */
  final: string | null;
  controller: AbortController;
}

const rolledBack = (lease: Lease) => lease.controller.signal.reason === 'rollback';

/**
 * Deletes a rolled-back run (its row locked in `tx`) and its checkpoints, so the thread's state is
 * as before it; the thread goes idle, or stays busy while other runs of it wait.
 */
export async function deleteRolledBack(tx: Tx, threadId: string, runId: string): Promise<void> {
  await checkpointer.delete(threadId, runId);
  await tx.query('DELETE FROM slipway_agent_runs WHERE run_id = $1', [runId]);
  await tx.query(
    `UPDATE slipway_agent_threads SET status = ${threadStatusAfterRun('$1')}, updated_at = now() WHERE thread_id = $1`,
    [threadId],
  );
}

export class RunQueue {
  private readonly held = new Map<string, Lease>();
  private timers: NodeJS.Timeout[] = [];
  private draining = false;
  private readonly presence: InstancePresence;
  private readonly sweeper: LeaseSweeper;

  constructor(
    private readonly db: Db,
    private readonly streams: RunStreams,
    private readonly options: QueueOptions,
    /** Counts for the platform's run metrics (run-stats.ts). */
    private readonly stats: Pick<RunStats, 'started' | 'ended'> = { started: async () => {}, ended: async () => {} },
  ) {
    streams.onCancel = (runId, action) => this.abort(runId, action);
    this.presence = new InstancePresence(db, options);
    this.sweeper = new LeaseSweeper(db, streams, stats);
  }

  get code(): string {
    return this.options.code;
  }

  async start(): Promise<void> {
    await this.presence.pruneGone();
    await this.announce();
    const { leaseMs } = this.options;
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const timer = setInterval(
        () => void fn().catch((err) => logger.warn('agent server: run queue upkeep failed', { error: String(err) })),
        ms,
      );
      this.timers.push(timer);
    };
    every(Math.max(200, Math.floor(leaseMs / 3)), () => this.renew());
    every(Math.max(500, Math.floor(leaseMs / 2)), () => this.sweeper.sweep());
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
  }

  /**
   * True while the run's lease is this instance's and cannot have lapsed, and no rollback stopped
   * it: its writes (events, checkpoints) may go.
   */
  allowed(runId: string): boolean {
    const lease = this.held.get(runId);
    return lease != null && this.valid(lease) && !rolledBack(lease);
  }

  private valid(lease: Lease): boolean {
    return !lease.lost && Date.now() < lease.expiresAt;
  }

  /** Whether this instance holds a lease on the run (fenced or not). */
  holds(runId: string): boolean {
    return this.held.has(runId);
  }

  /** The lease this instance holds for a run of `threadId`, if any. */
  leaseOfThread(threadId: string): { runId: string; allowed: boolean; rolledBack: boolean } | undefined {
    for (const lease of this.held.values()) {
      if (lease.threadId === threadId)
        return { runId: lease.runId, allowed: this.allowed(lease.runId), rolledBack: rolledBack(lease) };
    }
    return undefined;
  }

  /** Claims the oldest runnable run, or null when there is none (or the instance is draining). */
  async claim(): Promise<{ run: Run; attempt: number; signal: AbortSignal } | null> {
    if (this.draining || !this.options.claims) return null;
    const token = randomUUID();
    const sentAt = Date.now();
    const row = await claimOldestRun(this.db, this.options, token);
    if (!row) return null;
    const controller = new AbortController();
    this.held.set(row.run_id, {
      runId: row.run_id,
      threadId: row.thread_id,
      token,
      expiresAt: sentAt + this.options.leaseMs,
      claimedAt: Date.now(),
      lost: false,
      ended: false,
      final: null,
      controller,
    });
    const run = toRun(row);
    // Each step's checkpoint is saved before the next step starts (LangGraph's default saves it
    // while the next one runs): a run taken over after its instance died goes on from the last
    // node that finished, never from an earlier one.
    run.kwargs.config = {
      ...run.kwargs.config,
      configurable: { __pregel_durability: 'sync', ...run.kwargs.config?.configurable },
    };
    let resumed: boolean;
    try {
      resumed = await resumeFromCheckpoint(this.db, run);
    } catch (err) {
      await this.finish(run.run_id); // back to the queue
      throw err;
    }
    // A first claim starts the run; a claim after a lapsed lease or a hand-over continues it.
    if (row.attempt === 1 && !resumed) void this.stats.started();
    return { run, attempt: row.attempt, signal: controller.signal };
  }

  /**
   * The worker's final status, if the run's lease is still this instance's (false when fenced
   * off): held until `writeEnd` writes it with the thread's status. A run a rollback stopped is
   * deleted instead, whatever the status (the worker reports it as an error).
   */
  async setStatus(runId: string, status: string): Promise<boolean> {
    const lease = this.held.get(runId);
    if (!lease || !this.valid(lease)) return false;
    if (rolledBack(lease)) return this.rollBack(lease);
    lease.ended = true;
    lease.final = status;
    return true;
  }

  /**
   * Writes the run's final status, fenced by its token, and in the same transaction its thread's
   * status (`thread`; without it, the thread's status computed from the run's alone). False when
   * there is none to write or the lease was no longer this instance's.
   */
  async writeEnd(runId: string, thread?: (tx: Tx) => Promise<unknown>): Promise<boolean> {
    const lease = this.held.get(runId);
    const status = lease?.final;
    if (!lease || status == null || lease.lost) return false;
    const written = await inTransaction(this.db, async (tx) => {
      const { rowCount } = await tx.query(
        `UPDATE slipway_agent_runs SET status = $3, updated_at = now(), lease_expires_at = NULL ` +
          `WHERE run_id = $1 AND lease_token = $2 AND status = 'running'`,
        [runId, lease.token, status],
      );
      if (!rowCount) return false;
      if (thread) await thread(tx);
      else
        await tx.query(
          `UPDATE slipway_agent_threads SET status ` +
            `= ${threadStatusAfterRun('$1', status === 'error' ? `'error'` : `'idle'`)}, updated_at = now() ` +
            `WHERE thread_id = $1`,
          [lease.threadId],
        );
      return true;
    });
    lease.final = null;
    if (!written) this.lose(lease);
    else void this.stats.ended(status, Date.now() - lease.claimedAt);
    return written;
  }

  /**
   * The end of a run a rollback stopped: it and its checkpoints go, fenced by its lease (its row
   * locked meanwhile, so the thread's next run starts only once they are gone); `finish` then ends
   * its stream without an error and wakes the workers for that next run.
   */
  private async rollBack(lease: Lease): Promise<boolean> {
    lease.ended = true;
    const deleted = await inTransaction(this.db, async (tx) => {
      const { rowCount } = await tx.query(
        `SELECT 1 FROM slipway_agent_runs WHERE run_id = $1 AND lease_token = $2 AND status = 'running' FOR UPDATE`,
        [lease.runId, lease.token],
      );
      if (rowCount) await deleteRolledBack(tx, lease.threadId, lease.runId);
      return rowCount === 1;
    });
    if (!deleted) this.lose(lease);
    else
      logger.info('Deleted a run a rollback stopped, and its checkpoints', {
        run_id: lease.runId,
        thread_id: lease.threadId,
      });
    return deleted;
  }

  /** The worker is done with the run: the lease goes, its joiners hear the end. */
  async finish(runId: string): Promise<void> {
    const lease = this.held.get(runId);
    if (!lease) return;
    // A status its thread's write did not take with it (that write failed or never came).
    if (lease.final != null)
      await this.writeEnd(runId).catch((err) =>
        logger.warn('Could not write a run status', { run_id: runId, error: String(err) }),
      );
    this.held.delete(runId);
    if (lease.lost) return;
    // A run whose worker ended without writing its status (it threw past the server's own
    // handling) is not left running: it goes back to the queue, fenced by the token.
    await this.db.query(
      `UPDATE slipway_agent_runs SET status = 'pending', worker = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
        WHERE run_id = $1 AND lease_token = $2 AND status = 'running'`,
      [runId, lease.token],
    );
    await this.streams.end(runId);
    await this.streams.wake(); // the thread's next run, if one waits
  }

  /** Stops the run this instance executes (a cancel from any instance). */
  abort(runId: string, reason: CancelAction | 'requeue' | 'lease-lost'): void {
    const lease = this.held.get(runId);
    if (lease && !lease.ended) lease.controller.abort(reason);
  }

  private lose(lease: Lease): void {
    if (lease.lost) return;
    lease.lost = true;
    logger.warn('Run lease lost: its later writes are refused', { run_id: lease.runId });
    lease.controller.abort('lease-lost');
  }

  /** Says this instance (and its code) is alive, or draining. */
  announce(): Promise<void> {
    return this.presence.announce(this.draining);
  }

  /** Heartbeat: the instance's own, and every lease it holds extended; one it no longer holds stops its run. */
  async renew(): Promise<void> {
    await this.announce();
    // A run whose end is written is no longer `running`: its lease holds until `finish`.
    const leases = [...this.held.values()].filter((l) => !l.lost && !l.ended);
    if (!leases.length) return;
    const sentAt = Date.now();
    const { rows } = await this.db.query(
      `UPDATE slipway_agent_runs r SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
         FROM unnest($1::text[], $2::uuid[]) AS l(run_id, token)
        WHERE r.run_id = l.run_id AND r.lease_token = l.token AND r.status = 'running'
        RETURNING r.run_id`,
      [leases.map((l) => l.runId), leases.map((l) => l.token), this.options.leaseMs],
    );
    const renewed = new Set(rows.map((r: { run_id: string }) => r.run_id));
    for (const lease of leases) {
      if (renewed.has(lease.runId)) lease.expiresAt = Math.max(lease.expiresAt, sentAt + this.options.leaseMs);
      // One whose end was decided meanwhile is no longer `running`: not a lost lease.
      else if (this.held.get(lease.runId) === lease && !lease.ended) this.lose(lease);
    }
  }

  /**
   * SIGTERM: claim nothing more, give the runs in flight `graceMs` to finish, then requeue the
   * rest (their writes fenced from then on) so another instance resumes them from their checkpoint.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    await this.announce();
    const deadline = Date.now() + graceMs;
    while (this.held.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const left = [...this.held.values()];
    for (const lease of left) {
      lease.lost = true; // before the abort: the worker's error handling must not write
      lease.controller.abort('requeue');
    }
    await this.presence.leave();
    if (!left.length) return;
    await this.db.query(
      `UPDATE slipway_agent_runs r SET status = 'pending', worker = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
         FROM unnest($1::text[], $2::uuid[]) AS l(run_id, token)
        WHERE r.run_id = l.run_id AND r.lease_token = l.token AND r.status = 'running'`,
      [left.map((l) => l.runId), left.map((l) => l.token)],
    );
    logger.info('Requeued runs still in flight at shutdown', { run_ids: left.map((l) => l.runId) });
    await this.streams.wake();
  }
}
