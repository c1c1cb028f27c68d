import { DeploymentMetricsRepository, DeploymentRepository, type DataSource, type MetricsStep } from '@slipway/db';
import {
  METRIC_COUNTERS,
  METRIC_GAUGES,
  METRIC_LATENCIES,
  NotFoundError,
  type DeploymentMetricsView as MetricsView,
  type MetricName,
} from '@slipway/domain';
import { RevisionRepository } from '@slipway/pipeline';
import { revisionRollups } from '@slipway/tracing';
import { METRIC_WINDOWS, type MetricWindow } from '../schemas/deployment-metrics.schema.js';

export type DeploymentMetricsView = MetricsView<MetricWindow>;

const WINDOW_SECONDS: Record<MetricWindow, number> = { '1h': 3_600, '6h': 6 * 3_600, '24h': 24 * 3_600 };
const NAMES: readonly MetricName[] = [...METRIC_COUNTERS, ...METRIC_LATENCIES, ...METRIC_GAUGES];
const COUNTERS: ReadonlySet<MetricName> = new Set(METRIC_COUNTERS);

/** Weighted mean of per-step figures, as the repository merges buckets into steps. */
function weighted(steps: readonly MetricsStep[], value: MetricName, weight: (s: MetricsStep) => number): number | null {
  let sum = 0;
  let total = 0;
  for (const s of steps) {
    const v = s[value];
    const w = weight(s);
    if (v === null || !w) continue;
    sum += v * w;
    total += w;
  }
  return total ? sum / total : null;
}

/**
 * `GET /v2/deployments/{id}/metrics` (docs/api.md, Metrics): the deployment's history over a
 * window as series of equal steps (every step present: counters 0, other figures null when
 * nothing was measured), totals over the window, and its live instances' latest samples.
 */
export class DeploymentMetricsService {
  constructor(private readonly dataSource: DataSource) {}

  async window(workspaceId: string, deploymentId: string, window: MetricWindow): Promise<DeploymentMetricsView> {
    const manager = this.dataSource.manager;
    const deployment = await new DeploymentRepository(manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    const step = METRIC_WINDOWS[window];
    const now = Math.floor(Date.now() / 1000);
    const first = Math.floor((now - WINDOW_SECONDS[window]) / step) * step + step;
    const repo = new DeploymentMetricsRepository(manager);
    const [steps, instances, active, traces] = await Promise.all([
      repo.steps(deploymentId, new Date(first * 1000), step),
      repo.instances(deploymentId),
      deployment.activeRevisionId
        ? new RevisionRepository(manager).find(deploymentId, deployment.activeRevisionId)
        : Promise.resolve(null),
      deployment.tracingProjectId
        ? revisionRollups(
            manager,
            workspaceId,
            deployment.tracingProjectId,
            new Date((now - WINDOW_SECONDS[window]) * 1000),
          )
        : Promise.resolve([]),
    ]);
    const byStart = new Map(steps.map((s) => [s.t, s]));
    const series = Object.fromEntries(
      NAMES.map((n) => [n, [] as Array<[number, number | null]>]),
    ) as DeploymentMetricsView['series'];
    for (let t = first; t <= now; t += step) {
      const s = byStart.get(t);
      for (const n of NAMES) series[n].push([t, s?.[n] ?? (COUNTERS.has(n) ? 0 : null)]);
    }
    const totals = {} as DeploymentMetricsView['totals'];
    for (const n of METRIC_COUNTERS) totals[n] = steps.reduce((sum, s) => sum + (s[n] ?? 0), 0);
    for (const n of ['latency_p50_ms', 'latency_p95_ms', 'latency_p99_ms'] as const)
      totals[n] = weighted(steps, n, (s) => s.requests ?? 0);
    totals.run_duration_p50_ms = weighted(
      steps,
      'run_duration_p50_ms',
      (s) => (s.runs_succeeded ?? 0) + (s.runs_failed ?? 0),
    );
    totals.cpu_percent = weighted(steps, 'cpu_percent', () => 1);
    totals.memory_bytes = steps.reduce<number | null>(
      (max, s) => (s.memory_bytes === null ? max : Math.max(max ?? 0, s.memory_bytes)),
      null,
    );
    return {
      window,
      step_seconds: step,
      series,
      totals,
      instances_expected: active ? (active.resourceSpec.min_scale ?? 1) : null,
      instances,
      traces_by_revision: traces,
    };
  }
}
