import type { MetricsBucket } from '@slipway/db';
import { histogramQuantile, type AgentRunCounts } from './agent-runs.js';

/** Latencies kept per bucket to compute its percentiles; past that, a uniform sample of them. */
const MAX_LATENCIES = 10_000;

interface Open {
  deploymentId: string;
  bucketAt: number;
  requests: number;
  errors_4xx: number;
  errors_5xx: number;
  restarts: number;
  oom_kills: number;
  runs_started: number;
  runs_succeeded: number;
  runs_failed: number;
  /** Ended agent-server runs per duration bucket (agent-runs.ts), summed over the reads. */
  runDurations: number[];
  latencies: number[];
  /** Per instance, its last sample in this bucket. */
  samples: Map<string, { cpuPercent: number | null; memoryBytes: number | null }>;
}

/** The value at quantile `q` of sorted `values` (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

const sumOrNull = (values: Array<number | null>) => {
  const known = values.filter((v): v is number => v !== null);
  return known.length ? known.reduce((a, b) => a + b, 0) : null;
};

/**
 * Per deployment, the buckets of `bucketMs` still open in memory: request counts by status
 * class, latencies, restarts, agent-server runs, and each instance's last sample. `takeEnded` hands over the
 * buckets that are over as rows (a deployment's CPU and memory: the sum over its instances).
 */
export class BucketAccumulator {
  private readonly open = new Map<string, Open>();
  /** Rows a failed write put back, handed out again by the next `takeEnded`. */
  private pending: MetricsBucket[] = [];

  constructor(private readonly bucketMs: number) {}

  request(deploymentId: string, status: number, durationMs: number): void {
    const b = this.bucket(deploymentId);
    b.requests += 1;
    if (status >= 400 && status < 500) b.errors_4xx += 1;
    if (status >= 500) b.errors_5xx += 1;
    // Reservoir sampling: every latency of the bucket has the same chance to be kept.
    if (b.latencies.length < MAX_LATENCIES) b.latencies.push(durationMs);
    else {
      const at = Math.floor(Math.random() * b.requests);
      if (at < MAX_LATENCIES) b.latencies[at] = durationMs;
    }
  }

  restart(deploymentId: string, outOfMemory: boolean): void {
    const b = this.bucket(deploymentId);
    b.restarts += 1;
    if (outOfMemory) b.oom_kills += 1;
  }

  /** Agent-server runs its instances reported; `error` and `timeout` count as failed. */
  runs(deploymentId: string, counts: AgentRunCounts): void {
    const b = this.bucket(deploymentId);
    b.runs_started += counts.started;
    b.runs_succeeded += counts.outcomes.success;
    b.runs_failed += counts.outcomes.error + counts.outcomes.timeout;
    counts.durations.forEach((n, i) => (b.runDurations[i] = (b.runDurations[i] ?? 0) + n));
  }

  sample(
    deploymentId: string,
    instanceId: string,
    sample: { cpuPercent: number | null; memoryBytes: number | null },
  ): void {
    this.bucket(deploymentId).samples.set(instanceId, sample);
  }

  /** Removes and returns the buckets that ended at or before `now`. */
  takeEnded(now: number): MetricsBucket[] {
    const out = this.pending;
    this.pending = [];
    for (const [key, b] of this.open) {
      if (b.bucketAt + this.bucketMs > now) continue;
      this.open.delete(key);
      const sorted = [...b.latencies].sort((x, y) => x - y);
      const samples = [...b.samples.values()];
      out.push({
        deploymentId: b.deploymentId,
        bucketAt: new Date(b.bucketAt),
        requests: b.requests,
        errors_4xx: b.errors_4xx,
        errors_5xx: b.errors_5xx,
        restarts: b.restarts,
        oom_kills: b.oom_kills,
        runs_started: b.runs_started,
        runs_succeeded: b.runs_succeeded,
        runs_failed: b.runs_failed,
        run_duration_p50_ms: histogramQuantile(b.runDurations, 0.5),
        latency_p50_ms: quantile(sorted, 0.5),
        latency_p95_ms: quantile(sorted, 0.95),
        latency_p99_ms: quantile(sorted, 0.99),
        cpu_percent: sumOrNull(samples.map((s) => s.cpuPercent)),
        memory_bytes: sumOrNull(samples.map((s) => s.memoryBytes)),
      });
    }
    return out;
  }

  /** Buckets a failed write could not store go back (as rows: their counters add up on the next write). */
  putBack(rows: readonly MetricsBucket[]): void {
    this.pending.push(...rows);
  }

  private bucket(deploymentId: string): Open {
    const bucketAt = Math.floor(Date.now() / this.bucketMs) * this.bucketMs;
    const key = `${deploymentId}@${bucketAt}`;
    let b = this.open.get(key);
    if (!b) {
      b = {
        deploymentId,
        bucketAt,
        requests: 0,
        errors_4xx: 0,
        errors_5xx: 0,
        restarts: 0,
        oom_kills: 0,
        runs_started: 0,
        runs_succeeded: 0,
        runs_failed: 0,
        runDurations: [],
        latencies: [],
        samples: new Map(),
      };
      this.open.set(key, b);
    }
    return b;
  }
}
