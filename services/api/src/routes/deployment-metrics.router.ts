import { defineRoute, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import {
  deploymentMetricsQuery,
  deploymentMetricsResponse,
  type DeploymentMetricsQuery,
} from '../schemas/deployment-metrics.schema.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import type { DeploymentMetricsService } from '../services/deployment-metrics.service.js';

/** `GET /v2/deployments/{id}/metrics` (extra): a cloud-hosted deployment's runtime numbers (docs/api.md, Metrics). */
export function deploymentMetricsRoutes(metrics: DeploymentMetricsService): RouteSpec[] {
  return [
    defineRoute<{ deployment_id: string }, DeploymentMetricsQuery>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/metrics',
      operationId: 'getDeploymentMetrics',
      summary:
        'Requests, latency, errors, CPU, memory, restarts and agent runs of a deployment over a window, and its instances',
      tag: 'Deployments',
      auth: 'workspace',
      request: { params: deploymentParams, query: deploymentMetricsQuery },
      responses: {
        200: {
          description: 'Series of equal steps over the window (oldest first), totals, and the live instances',
          schema: deploymentMetricsResponse,
        },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) => ok(await metrics.window(workspaceOf(ctx), ctx.params.deployment_id, ctx.query.window)),
    }),
  ];
}
