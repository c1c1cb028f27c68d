import { defineRoute, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { envelope, type PaginationQuery } from '../schemas/common.schema.js';
import { deploymentTraceList, deploymentTracesQuery } from '../schemas/deployment-traces.schema.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import type { DeploymentTracesService } from '../services/deployment-traces.service.js';

/** `GET /v2/deployments/{id}/traces` (extra): the traces of the deployment's tracing project (docs/tracing.md). */
export function deploymentTracesRoutes(traces: DeploymentTracesService): RouteSpec[] {
  return [
    defineRoute<{ deployment_id: string }, PaginationQuery>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/traces',
      operationId: 'listDeploymentTraces',
      summary: "Traces of the deployment's tracing project (tracer_session_id), newest first, each with its summary",
      tag: 'Deployments',
      auth: 'workspace',
      request: { params: deploymentParams, query: deploymentTracesQuery },
      responses: {
        200: { description: 'A page of traces', schema: deploymentTraceList },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) =>
        ok(envelope(await traces.list(workspaceOf(ctx), ctx.params.deployment_id, ctx.query), ctx.query)),
    }),
  ];
}
