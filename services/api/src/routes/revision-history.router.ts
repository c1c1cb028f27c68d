import { defineRoute, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import {
  revisionHistoryQuery,
  revisionHistoryResponse,
  type RevisionHistoryQuery,
} from '../schemas/revision-history.schema.js';
import type { RevisionHistoryService } from '../services/revision-history.service.js';

/** `GET /v2/deployments/{id}/revision-history` (extra): status changes of the newest revisions. */
export function revisionHistoryRoutes(history: RevisionHistoryService): RouteSpec[] {
  return [
    defineRoute<{ deployment_id: string }, RevisionHistoryQuery>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/revision-history',
      operationId: 'getRevisionHistory',
      summary: "Status changes of a deployment's newest revisions, with the time spent in each status",
      tag: 'Deployments',
      auth: 'workspace',
      request: { params: deploymentParams, query: revisionHistoryQuery },
      responses: {
        200: {
          description: 'Newest revision first, each with its changes oldest first',
          schema: revisionHistoryResponse,
        },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) => ok(await history.recent(workspaceOf(ctx), ctx.params.deployment_id, ctx.query.limit)),
    }),
  ];
}
