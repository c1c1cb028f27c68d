import { defineRoute, eventStream, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { deploymentParams, revisionParams } from '../schemas/deployment.schema.js';
import {
  followHeaders,
  logPageResponse,
  logsBody,
  logsQuery,
  workspaceLogPageResponse,
  workspaceLogsQuery,
  type LogsBody,
  type LogsQuery,
  type WorkspaceLogsQuery,
} from '../schemas/log.schema.js';
import type { LogService } from '../services/log.service.js';

type DeploymentParams = { deployment_id: string };
type RevisionParams = { deployment_id: string; revision_id: string };

const tag = 'Logs';
const page = {
  description: 'A page of log lines; pass next_offset back as offset for the next',
  schema: logPageResponse,
};
const notFound = { description: 'Deployment or revision not found in this workspace' };

/**
 * Revision logs (docs/api.md, Logs): one GET (which can also follow the log as Server-Sent Events), and the
 * `POST /v1/projects/...` shapes the published CLIs call (`project` is their word for a deployment).
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
      request: { params: revisionParams, query: logsQuery, headers: followHeaders },
      responses: {
        200: {
          ...page,
          description: `${page.description}; with follow=true a text/event-stream of lines (id: the line id), then an \`end\` event`,
        },
        404: notFound,
      },
      handler: async (ctx) => {
        const { type, follow, ...paging } = ctx.query;
        const { deployment_id, revision_id } = ctx.params;
        if (follow) {
          const from =
            (ctx.headers['last-event-id'] as string | undefined) ?? (paging.offset ? String(paging.offset) : null);
          // Checked before the stream opens, so a missing revision is still a 404.
          await logs.revisionPage(workspaceOf(ctx), deployment_id, revision_id, type, { ...paging, limit: 1 });
          return eventStream((sink) =>
            logs.follow(workspaceOf(ctx), deployment_id, revision_id, type, paging, from, sink),
          );
        }
        return ok(await logs.revisionPage(workspaceOf(ctx), deployment_id, revision_id, type, paging));
      },
    }),
    defineRoute<{}, WorkspaceLogsQuery>({
      method: 'get',
      path: '/v2/deployment-logs',
      operationId: 'listDeploymentLogs',
      summary: "Log lines across the workspace's deployments (optionally one deployment or revision), paged by cursor",
      tag,
      auth: 'workspace',
      request: { query: workspaceLogsQuery, headers: followHeaders },
      responses: {
        200: {
          ...page,
          schema: workspaceLogPageResponse,
          description: `${page.description}; with follow=true a text/event-stream of lines (id: the line id) until the client leaves`,
        },
      },
      handler: async (ctx) => {
        const { follow, ...query } = ctx.query;
        if (follow) {
          const from =
            (ctx.headers['last-event-id'] as string | undefined) ?? (query.offset ? String(query.offset) : null);
          return eventStream((sink) => logs.followWorkspace(workspaceOf(ctx), query, from, sink));
        }
        return ok(await logs.workspacePage(workspaceOf(ctx), query));
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
