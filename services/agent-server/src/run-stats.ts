// Run counts for the platform's per-deployment metrics: every instance adds to one Redis hash
// under the deployment's REDIS_PREFIX (HINCRBY: atomic across instances), which the platform's
// deployer reads and deletes in one MULTI every few seconds. The hash holds only counters:
// `started`, one per final status (`success`, `error`, `interrupted`, `timeout`), and the ended
// runs' durations as a fixed histogram (`d0` … `dN`: runs at most DURATION_BOUNDS_MS[i] long,
// the last one longer than all). The key, fields and bounds are the deployer's contract
// (services/deployer/src/metrics/agent-runs.ts): change both together.

/** What RunStats needs of an ioredis client (structural: any ioredis version fits). */
export interface CounterClient {
  multi(): { hincrby(key: string, field: string, increment: number): unknown; exec(): Promise<unknown> };
}

export const RUN_STATS_KEY = 'slipway:run-stats';
export const DURATION_BOUNDS_MS = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000];
const ENDED = new Set(['success', 'error', 'interrupted', 'timeout']);

export class RunStats {
  private readonly key: string;

  constructor(
    private readonly redis: CounterClient,
    prefix: string,
    private readonly warn: (message: string, fields: Record<string, unknown>) => void = () => {},
  ) {
    this.key = `${prefix}:${RUN_STATS_KEY}`;
  }

  /** A run began executing for the first time (not a claim that resumes it). */
  started(): Promise<void> {
    return this.add([['started', 1]]);
  }

  /**
   * A started run reached `status` (non-final statuses are ignored) after `durationMs` of its
   * last claim; null when no instance saw it end (its leases lapsed too often).
   */
  ended(status: string, durationMs: number | null): Promise<void> {
    if (!ENDED.has(status)) return Promise.resolve();
    const fields: Array<[string, number]> = [[status, 1]];
    if (durationMs !== null) {
      const bucket = DURATION_BOUNDS_MS.findIndex((bound) => durationMs <= bound);
      fields.push([`d${bucket < 0 ? DURATION_BOUNDS_MS.length : bucket}`, 1]);
    }
    return this.add(fields);
  }

  /** Best effort: never rejects (callers do not wait for it; metrics never hold up or fail a run). */
  private async add(fields: Array<[string, number]>): Promise<void> {
    const tx = this.redis.multi();
    for (const [field, n] of fields) tx.hincrby(this.key, field, n);
    await tx.exec().catch((err) => this.warn('agent server: recording run metrics failed', { error: String(err) }));
  }
}
