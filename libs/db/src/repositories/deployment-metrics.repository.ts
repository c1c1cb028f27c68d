import type { EntityManager } from 'typeorm';
import {
  METRIC_COUNTERS,
  METRIC_GAUGES,
  METRIC_LATENCIES,
  type InstanceMetrics,
  type MetricCounter,
  type MetricName,
} from '@slipway/domain';
import { queryRows } from '../sql.js';

/** One deployment's numbers over one fixed time bucket, as the deployer serving it records them. */
export type MetricsBucket = { deploymentId: string; bucketAt: Date } & Record<MetricCounter, number> &
  Partial<Record<(typeof METRIC_LATENCIES)[number] | (typeof METRIC_GAUGES)[number], number | null>>;

/** One step of a window: its start (epoch seconds) and every metric (null: nothing measured). */
export type MetricsStep = { t: number } & Record<MetricName, number | null>;

/** Which request count weighs a latency column when steps merge buckets. */
const WEIGHT: Record<(typeof METRIC_LATENCIES)[number], string> = {
  latency_p50_ms: 'requests',
  latency_p95_ms: 'requests',
  latency_p99_ms: 'requests',
  run_duration_p50_ms: 'runs_succeeded + runs_failed',
};

/**
 * The short history of per-deployment metrics (docs/api.md, Metrics): fixed buckets written by
 * the deployer that serves the deployment, read as steps of a window, pruned past retention.
 */
export class DeploymentMetricsRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * Stores buckets; a bucket already stored (written twice, e.g. by a deployer that took over)
   * adds its counters and keeps the newer figures.
   */
  async add(buckets: readonly MetricsBucket[]): Promise<void> {
    const columns = [...METRIC_COUNTERS, ...METRIC_LATENCIES, ...METRIC_GAUGES];
    for (const b of buckets) {
      const values = columns.map((c) => b[c as keyof MetricsBucket] ?? null);
      await this.manager.query(
        `INSERT INTO deployment_metrics (deployment_id, bucket_at, ${columns.join(', ')})
         SELECT $1, $2, ${columns.map((_, i) => `$${i + 3}`).join(', ')} WHERE EXISTS (SELECT 1 FROM deployments WHERE id = $1)
         ON CONFLICT (deployment_id, bucket_at) DO UPDATE SET
           ${[
             ...METRIC_COUNTERS.map((c) => `${c} = deployment_metrics.${c} + EXCLUDED.${c}`),
             ...[...METRIC_LATENCIES, ...METRIC_GAUGES].map(
               (c) => `${c} = coalesce(EXCLUDED.${c}, deployment_metrics.${c})`,
             ),
           ].join(', ')}`,
        [b.deploymentId, b.bucketAt, ...values],
      );
    }
  }

  /** Removes buckets older than `before`; returns how many. */
  async prune(before: Date): Promise<number> {
    const rows = await queryRows<{ n: string }>(
      this.manager,
      `WITH d AS (DELETE FROM deployment_metrics WHERE bucket_at < $1 RETURNING 1) SELECT count(*) AS n FROM d`,
      [before],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** The deployment's steps of `stepSeconds` from `since`, oldest first; steps without a bucket are absent. */
  async steps(deploymentId: string, since: Date, stepSeconds: number): Promise<MetricsStep[]> {
    const step = `floor(extract(epoch FROM bucket_at) / $3) * $3`;
    const latencies = METRIC_LATENCIES.map(
      (c) => `sum(${c} * (${WEIGHT[c]})) / nullif(sum(CASE WHEN ${c} IS NULL THEN 0 ELSE ${WEIGHT[c]} END), 0) AS ${c}`,
    ).join(', ');
    const rows = await queryRows<Record<string, string | number | null>>(
      this.manager,
      `SELECT ${step} AS t,
              ${METRIC_COUNTERS.map((c) => `sum(${c}) AS ${c}`).join(', ')},
              ${latencies},
              avg(cpu_percent) AS cpu_percent, max(memory_bytes) AS memory_bytes
         FROM deployment_metrics
        WHERE deployment_id = $1 AND bucket_at >= $2
        GROUP BY 1 ORDER BY 1`,
      [deploymentId, since, stepSeconds],
    );
    const num = (v: string | number | null | undefined) => (v === null || v === undefined ? null : Number(v));
    return rows.map((r) => {
      const out = { t: Number(r.t) } as MetricsStep;
      for (const c of [...METRIC_COUNTERS, ...METRIC_LATENCIES, ...METRIC_GAUGES]) out[c] = num(r[c]);
      return out;
    });
  }

  /** The deployment's live instances with their latest sample, by index. */
  async instances(deploymentId: string): Promise<InstanceMetrics[]> {
    const rows = await queryRows<{
      id: string;
      log_path: string;
      revision_id: string;
      status: string;
      started_at: Date;
      restarts: number;
      memory_bytes: string | null;
      cpu_percent: number | null;
      healthy: boolean | null;
      last_health_check_at: Date | null;
    }>(
      this.manager,
      `SELECT id, log_path, revision_id, status, started_at, restarts, memory_bytes, cpu_percent, healthy, last_health_check_at
         FROM runtime_processes WHERE deployment_id = $1 AND status <> 'exited' ORDER BY revision_id, log_path`,
      [deploymentId],
    );
    return rows.map((r) => ({
      id: r.id,
      // The instance's log file is named after its index (the process runtime's convention).
      index: Number(/-(\d+)\.log$/.exec(r.log_path)?.[1] ?? 0),
      revision_id: r.revision_id,
      status: r.status,
      started_at: r.started_at.toISOString(),
      restarts: r.restarts,
      memory_bytes: r.memory_bytes === null ? null : Number(r.memory_bytes),
      cpu_percent: r.cpu_percent,
      healthy: r.healthy,
      last_health_check_at: r.last_health_check_at?.toISOString() ?? null,
    }));
  }
}
