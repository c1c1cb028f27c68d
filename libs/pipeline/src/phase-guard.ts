import type { PipelineTimings } from '@slipway/config';
import type { DataSource } from '@slipway/db';
import { RevisionRepository } from './revision.repository.js';
import type { RevisionStatus } from '@slipway/domain';

/**
 * Keeps a revision's phase alive while a worker works on it, and tells the worker to stop.
 * Every `heartbeatIntervalMs` it refreshes `heartbeat_at` — conditionally, only while the
 * revision is still in one of `statuses` — and aborts `signal` when that update finds the
 * revision moved on (interrupted, failed by the reconciler) or its deadline has passed. The
 * worker passes `signal` to whatever it runs (child processes, waits), so cancellation and
 * deadlines reach the work itself.
 */
export class PhaseGuard {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly revisionId: string,
    private readonly statuses: readonly RevisionStatus[],
    private readonly timings: Pick<PipelineTimings, 'heartbeatIntervalMs'>,
    /**
     * The attempt this worker runs. When the reconciler has retried the phase meanwhile, the
     * revision is back in the same status under a new attempt: matching the attempt is what
     * tells this (stale) worker to stop instead of beating on as if it still owned the phase.
     */
    private readonly attempt?: number,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the work must stop, once `signal` has fired. */
  get reason(): string | undefined {
    return this.controller.signal.aborted ? String(this.controller.signal.reason) : undefined;
  }

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), this.timings.heartbeatIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    if (this.controller.signal.aborted) return;
    try {
      const beat = await new RevisionRepository(this.dataSource.manager).beat(
        this.revisionId,
        this.statuses,
        this.attempt,
      );
      if (beat === 'moved-on') this.controller.abort('The revision was interrupted or moved on by another process.');
      else if (beat === 'overdue') this.controller.abort('The phase deadline passed.');
    } catch {
      // A missed beat is not a verdict: Postgres may be briefly away. The reconciler judges staleness.
    }
  }
}
