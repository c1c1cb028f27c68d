/**
 * What `GET /v2/deployments/{id}/metrics` answers (docs/api.md, Metrics): the metric names, their
 * kinds and the response's shape. The repository that stores buckets, the api that serves them
 * and the console that draws them all read these, so a metric is added in one place.
 */

/** Counters of a bucket: summed when buckets are merged or a window is totalled. */
export const METRIC_COUNTERS = [
  'requests',
  'errors_4xx',
  'errors_5xx',
  'restarts',
  'oom_kills',
  'runs_started',
  'runs_succeeded',
  'runs_failed',
] as const;
/** Per-bucket figures of requests or runs (milliseconds): averaged over a step, weighted by their count. */
export const METRIC_LATENCIES = ['latency_p50_ms', 'latency_p95_ms', 'latency_p99_ms', 'run_duration_p50_ms'] as const;
/** Samples of the deployment's instances together: CPU averaged over a step, memory at its highest. */
export const METRIC_GAUGES = ['cpu_percent', 'memory_bytes'] as const;

export type MetricCounter = (typeof METRIC_COUNTERS)[number];
export type MetricName = MetricCounter | (typeof METRIC_LATENCIES)[number] | (typeof METRIC_GAUGES)[number];

/** One step of a series: its start (Unix seconds) and its value (null: nothing measured). */
export type MetricPoint = [number, number | null];

/** A live instance as the metrics endpoint shows it. */
export interface InstanceMetrics {
  id: string;
  /** Which of the revision's instances (0-based): the `instance` of its deploy-log lines. */
  index: number;
  revision_id: string;
  status: string;
  started_at: string;
  restarts: number;
  memory_bytes: number | null;
  cpu_percent: number | null;
  healthy: boolean | null;
  last_health_check_at: string | null;
}

/** A revision's traces over the window (its runs' `metadata.revision_id`), from the trace summaries. */
export interface RevisionTraceRollup {
  /** The revision the traces name (null: traces that name none). */
  revision_id: string | null;
  traces: number;
  /** Traces whose root ended in an error. */
  errors: number;
  /** Of the traces that ended: median and 95th percentile of root latency, milliseconds (null: none ended). */
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** When the newest of them started. */
  last_trace_at: string;
}

/** The response, for the window `W` (the api's joi schema lists the windows it serves). */
export interface DeploymentMetricsView<W extends string = string> {
  window: W;
  step_seconds: number;
  series: Record<MetricName, MetricPoint[]>;
  totals: Record<MetricName, number | null>;
  instances_expected: number | null;
  instances: InstanceMetrics[];
  /** The deployment's traces over the window per revision, newest first (at most 20 revisions). */
  traces_by_revision: RevisionTraceRollup[];
}
