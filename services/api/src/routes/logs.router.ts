import { defineRoute, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { deploymentParams, revisionParams } from '../schemas/deployment.schema.js';
import { logPageResponse, logsBody, logsQuery, type LogsBody, type LogsQuery } from '../schemas/log.schema.js';
import type { LogService } from '../services/log.service.js';

type DeploymentParams = { deployment_id: string };
type RevisionParams = { deployment_id: string; revision_id: string };

const tag = 'Logs';
const page = { description: 'A page of log lines; pass next_offset back as offset for the next', schema: logPageResponse };
const notFound = { description: 'Deployment or revision not found in this workspace' };

/**
 * Revision logs (CONTRACT C5): one GET, and the `POST /v1/projects/...` shapes the published
 * CLIs call (`project` is their word for a deployment).
 */
export function logRoutes(logs: LogService): RouteSpec[] {
  const revisionLogs = (type: 'build' | 'deploy') =>
    defineRoute<RevisionParams, {}, LogsBody>({
      method: 'post',
      path: `/v1/projects/:deployment_id/revisions/:revision_id/${type}_logs`,
      operationId: type === 'build' ? 'postBuildLogs' : 'postRevisionDeployLogs',
      summary: `${type === 'build' ? 'Build' : 'Deploy'} logs of a revision (CLI compatibility)`,
      tag,
      auth: 'workspace',
      request: { params: revisionParams, body: logsBody },
      responses: { 200: page, 404: notFound },
      handler: async (ctx) =>
        ok(await logs.revisionPage(workspaceOf(ctx), ctx.params.deployment_id, ctx.params.revision_id, type, ctx.body)),
    });

  return [
    defineRoute<RevisionParams, LogsQuery>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/revisions/:revision_id/logs',
      operationId: 'getRevisionLogs',
      summary: 'Build or deploy logs of a revision, paged by cursor',
      tag,
      auth: 'workspace',
      request: { params: revisionParams, query: logsQuery },
      responses: { 200: page, 404: notFound },
      handler: async (ctx) => {
        const { type, ...paging } = ctx.query;
        return ok(await logs.revisionPage(workspaceOf(ctx), ctx.params.deployment_id, ctx.params.revision_id, type, paging));
      },
    }),
    revisionLogs('build'),
    revisionLogs('deploy'),
    defineRoute<DeploymentParams, {}, LogsBody>({
      method: 'post',
      path: '/v1/projects/:deployment_id/deploy_logs',
      operationId: 'postDeployLogs',
      summary: "Deploy logs of the deployment's active revision, else its latest (CLI compatibility)",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, body: logsBody },
      responses: { 200: page, 404: notFound },
      handler: async (ctx) => ok(await logs.deploymentDeployPage(workspaceOf(ctx), ctx.params.deployment_id, ctx.body)),
    }),
  ];
}
