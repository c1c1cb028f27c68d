/** `GET /v2/deployments/{id}/metrics` (docs/api.md, Metrics): the fields the console reads. */
export type MetricWindow = '1h' | '24h';
export type Point = [number, number | null];

export const SERIES_NAMES = [
  'requests',
  'errors_4xx',
  'errors_5xx',
  'latency_p50_ms',
  'latency_p95_ms',
  'latency_p99_ms',
  'cpu_percent',
  'memory_bytes',
  'restarts',
  'oom_kills',
  'runs_started',
  'runs_succeeded',
  'runs_failed',
  'run_duration_p50_ms',
] as const;
export type SeriesName = (typeof SERIES_NAMES)[number];

export interface InstanceMetrics {
  id: string;
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

export interface DeploymentMetrics {
  window: string;
  step_seconds: number;
  series: Record<SeriesName, Point[]>;
  totals: Record<SeriesName, number | null>;
  instances_expected: number | null;
  instances: InstanceMetrics[];
}
