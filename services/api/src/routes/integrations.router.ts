import { created, defineRoute, noContent, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { envelope, type PaginationQuery } from '../schemas/common.schema.js';
import {
  branchesQuery,
  branchList,
  createdIntegrationResponse,
  createIntegrationBody,
  deliveryList,
  deliveryResponse,
  integrationList,
  integrationParams,
  integrationResponse,
  listDeliveriesQuery,
  listIntegrationsQuery,
  repositoryList,
  webhookHeaders,
  type CreateIntegrationBody,
} from '../schemas/integration.schema.js';
import type { IntegrationService } from '../services/integration.service.js';
import type { WebhookService } from '../services/webhook.service.js';

type Params = { integration_id: string };
const tag = 'Integrations';
const notFound = { description: 'Integration not found in this workspace' };
const hostFailed = { description: 'The repository host failed or refused; `detail` says what it answered' };

export interface IntegrationRouteDeps {
  integrations: IntegrationService;
  webhooks: WebhookService;
}

export function integrationRoutes({ integrations, webhooks }: IntegrationRouteDeps): RouteSpec[] {
  const listRepos = (path: string, operationId: string, summary: string) =>
    defineRoute<Params>({
      method: 'get',
      path,
      operationId,
      summary,
      tag,
      auth: 'workspace',
      request: { params: integrationParams },
      responses: {
        200: { description: 'Repositories available to deploy', schema: repositoryList },
        404: notFound,
        502: hostFailed,
      },
      handler: async (ctx) => ok(await integrations.repositories(workspaceOf(ctx), ctx.params.integration_id)),
    });

  return [
    defineRoute<{}, {}, CreateIntegrationBody>({
      method: 'post',
      path: '/v1/integrations/repohost',
      operationId: 'createRepohostIntegration',
      summary: 'Create a repository-host integration (admin); the response alone shows the webhook secret',
      tag,
      auth: 'workspace',
      admin: true,
      request: { body: createIntegrationBody },
      responses: {
        201: { description: 'Created', schema: createdIntegrationResponse },
        400: { description: 'A local root outside SLIPWAY_LOCAL_REPOS_ROOT, or missing' },
        409: { description: 'An integration with this name exists in the workspace' },
      },
      handler: async (ctx) => created(await integrations.create(workspaceOf(ctx), ctx.body)),
    }),
    defineRoute<{}, PaginationQuery>({
      method: 'get',
      path: '/v1/integrations/repohost',
      operationId: 'listRepohostIntegrations',
      summary: 'List repository-host integrations, newest first',
      tag,
      auth: 'workspace',
      request: { query: listIntegrationsQuery },
      responses: { 200: { description: 'A page of integrations', schema: integrationList } },
      handler: async (ctx) => ok(envelope(await integrations.list(workspaceOf(ctx), ctx.query), ctx.query)),
    }),
    defineRoute<Params>({
      method: 'get',
      path: '/v1/integrations/repohost/:integration_id',
      operationId: 'getRepohostIntegration',
      summary: 'Get a repository-host integration',
      tag,
      auth: 'workspace',
      request: { params: integrationParams },
      responses: { 200: { description: 'The integration', schema: integrationResponse }, 404: notFound },
      handler: async (ctx) => ok(await integrations.get(workspaceOf(ctx), ctx.params.integration_id)),
    }),
    defineRoute<Params>({
      method: 'delete',
      path: '/v1/integrations/repohost/:integration_id',
      operationId: 'deleteRepohostIntegration',
      summary: 'Delete a repository-host integration (admin)',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: integrationParams },
      responses: { 204: { description: 'Deleted' }, 400: { description: 'Deployments still use it' }, 404: notFound },
      handler: async (ctx) => {
        await integrations.delete(workspaceOf(ctx), ctx.params.integration_id);
        return noContent();
      },
    }),
    listRepos(
      '/v1/integrations/repohost/:integration_id/repos',
      'listRepohostRepositories',
      'List the repositories of an integration',
    ),
    listRepos(
      '/v1/integrations/github/:integration_id/repos',
      'listGithubRepositories',
      'List the repositories of an integration (alias)',
    ),
    defineRoute<Params, { repo_url: string }>({
      method: 'get',
      path: '/v1/integrations/repohost/:integration_id/branches',
      operationId: 'listRepohostBranches',
      summary: "List up to 100 branches of one of an integration's repositories, the default branch first",
      tag,
      auth: 'workspace',
      request: { params: integrationParams, query: branchesQuery },
      responses: {
        200: { description: 'Branches, each with the commit it points at', schema: branchList },
        404: { description: 'Integration not found in this workspace, or the repository is not one it lists' },
        502: hostFailed,
      },
      handler: async (ctx) =>
        ok(await integrations.branches(workspaceOf(ctx), ctx.params.integration_id, ctx.query.repo_url)),
    }),
    defineRoute<Params>({
      method: 'post',
      path: '/v1/integrations/repohost/:integration_id/webhook',
      operationId: 'receiveRepohostWebhook',
      summary:
        'Push webhook: a push to a tracked branch builds every deployment with build_on_push (HMAC-SHA256 signed)',
      tag,
      // The HMAC of the body under the integration's webhook secret is the credential.
      auth: 'none',
      // Raw bytes: the signature is checked before any JSON is parsed (up to 25 MB, GitHub's limit).
      streamBody: true,
      request: { params: integrationParams, headers: webhookHeaders },
      responses: {
        200: { description: 'Recorded; `outcome` says what was done', schema: deliveryResponse },
        400: { description: 'Signed, but not a usable push payload' },
        401: { description: 'Missing or invalid X-Hub-Signature-256' },
        404: { description: 'No such integration' },
        409: {
          description:
            'A replayed push: the same signed payload was already received, or it is older than the replay window',
        },
        413: { description: 'The payload is larger than 25 MB' },
        415: { description: 'The payload was not sent as application/json' },
      },
      handler: async (ctx) => {
        const delivery = await webhooks.receive({
          integrationId: ctx.params.integration_id,
          headers: ctx.headers,
          body: ctx.bodyStream!,
          requestId: ctx.requestId,
          log: ctx.log,
        });
        return delivery.status_code < 300
          ? ok(delivery)
          : { status: delivery.status_code, body: { detail: delivery.outcome } };
      },
    }),
    defineRoute<Params, PaginationQuery>({
      method: 'get',
      path: '/v1/integrations/repohost/:integration_id/deliveries',
      operationId: 'listRepohostWebhookDeliveries',
      summary: 'List the push webhook deliveries of an integration, newest first',
      tag,
      auth: 'workspace',
      request: { params: integrationParams, query: listDeliveriesQuery },
      responses: { 200: { description: 'A page of deliveries', schema: deliveryList }, 404: notFound },
      handler: async (ctx) =>
        ok(envelope(await integrations.deliveries(workspaceOf(ctx), ctx.params.integration_id, ctx.query), ctx.query)),
    }),
  ];
}
