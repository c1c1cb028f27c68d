/** `GET /v2/deployments/{id}/metrics` (docs/api.md, Metrics), as the console reads it. */
import type { DeploymentMetricsView, MetricPoint } from '@slipway/domain/deployment-metrics';

/** The windows the console offers (the api also serves 6h). */
export type MetricWindow = '1h' | '24h';
export type Point = MetricPoint;
export type DeploymentMetrics = DeploymentMetricsView;
export type { InstanceMetrics } from '@slipway/domain/deployment-metrics';
