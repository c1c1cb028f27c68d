import Joi from 'joi';
import { AppError, ForbiddenError } from '@slipway/domain';
import {
  created,
  defineRoute,
  noContent,
  ok,
  principalOf,
  workspaceOf,
  type RequestContext,
  type RouteSpec,
} from '../http/route.js';
import { envelope } from '../schemas/common.schema.js';
import {
  bulkDeleteQuery,
  bulkDeleteResponse,
  createDeploymentBody,
  freeCountResponse,
  deleteDeploymentQuery,
  deploymentParams,
  listDeploymentsQuery,
  listRevisionsQuery,
  patchDeploymentBody,
  revisionParams,
  type CreateDeploymentBody,
  type ListDeploymentsQuery,
  type PatchDeploymentBody,
} from '../schemas/deployment.schema.js';
import {
  deploymentList,
  deploymentResponse,
  revisionList,
  revisionResponse,
} from '../schemas/deployment-response.schema.js';
import type { DeploymentService } from '../services/deployment.service.js';
import type { IdempotencyInput, WriteRunner } from '../http/idempotency.js';
import type { RevisionService } from '../services/revision.service.js';

type DeploymentParams = { deployment_id: string };

export const SERVING_AUTH_NONE_ADMIN_ONLY =
  "Only an admin may set source_config.serving_auth to 'none' (a serving URL open to anyone).";
const servingAuthForbidden = { description: '`source_config.serving_auth: "none"` from a caller who is not an admin' };

/** Opening a serving URL to anyone is an admin's decision (docs/api.md, Deployments). */
function assertMaySetServingAuth(
  ctx: RequestContext<any, any, { source_config?: { serving_auth?: string | null } | null }>,
): void {
  if (ctx.body.source_config?.serving_auth === 'none' && principalOf(ctx).role !== 'admin')
    throw new ForbiddenError(SERVING_AUTH_NONE_ADMIN_ONLY);
}
type RevisionParams = { deployment_id: string; revision_id: string };

const tag = 'Deployments';
const notFound = { description: 'Deployment (or revision) not found in this workspace' };

/** An `internal_docker` image_uri that cannot be resolved because the built-in registry does not answer. */
const registryUnavailable = {
  description:
    'An `internal_docker` `image_uri` could not be resolved: the built-in registry does not answer. ' +
    'Nothing was changed; `Retry-After` says when to send it again',
};

/** `Idempotency-Key` on the writes that create revisions: same key and body within 24 h replays. */
const idempotencyHeaders = Joi.object({
  'idempotency-key': Joi.string()
    .min(1)
    .max(255)
    .pattern(/^[\x21-\x7e]+$/)
    .description(
      'Replays the first response for the same key and request within 24 h; another request with the key → 409',
    ),
});

const idempotencyOf = (ctx: RequestContext<any, any, any>, operation: string): IdempotencyInput => ({
  key: ctx.headers['idempotency-key'] as string | undefined,
  request: { operation, params: ctx.params, body: ctx.body },
});

export interface DeploymentRouteDeps {
  deployments: DeploymentService;
  revisions: RevisionService;
  writes: WriteRunner;
}

export function deploymentRoutes({ deployments, revisions, writes }: DeploymentRouteDeps): RouteSpec[] {
  return [
    defineRoute<{}, {}, CreateDeploymentBody>({
      method: 'post',
      path: '/v2/deployments',
      operationId: 'createDeployment',
      summary: 'Create a deployment (and its first revision)',
      tag,
      auth: 'workspace',
      request: { body: createDeploymentBody, headers: idempotencyHeaders },
      responses: {
        201: { description: 'Created; poll `latest_revision_id` until DEPLOYED', schema: deploymentResponse },
        403: servingAuthForbidden,
        404: { description: 'source_config.listener_id names no listener of this workspace' },
        409: { description: 'The name is taken, or the Idempotency-Key was used with another request' },
      },
      handler: async (ctx) => {
        assertMaySetServingAuth(ctx);
        // Outside the transaction: a repohost create asks the forge, which may be slow.
        const draft = await deployments.prepareCreate(workspaceOf(ctx), ctx.body);
        // Again, after a short transaction laying slots out, when no deployment slot was free.
        return deployments.withDeploymentSlot(workspaceOf(ctx), () =>
          writes.run(workspaceOf(ctx), idempotencyOf(ctx, 'createDeployment'), async (m) =>
            created(await deployments.create(m, workspaceOf(ctx), ctx.body, draft, ctx.requestId)),
          ),
        );
      },
    }),
    defineRoute<{}, ListDeploymentsQuery>({
      method: 'get',
      path: '/v2/deployments',
      operationId: 'listDeployments',
      summary: 'List deployments, newest first',
      tag,
      auth: 'workspace',
      request: { query: listDeploymentsQuery },
      responses: { 200: { description: 'A page of deployments', schema: deploymentList } },
      handler: async (ctx) => ok(envelope(await deployments.list(workspaceOf(ctx), ctx.query), ctx.query)),
    }),
    // Before `/:deployment_id`, which would take `free-count` for an id.
    defineRoute({
      method: 'get',
      path: '/v2/deployments/free-count',
      operationId: 'getFreeDeploymentCount',
      summary: 'How many deployments of type dev_free the organization has',
      tag,
      auth: 'workspace',
      responses: { 200: { description: 'The count', schema: freeCountResponse } },
      handler: async (ctx) => ok({ count: await deployments.freeCount(principalOf(ctx).organizationId) }),
    }),
    defineRoute<{}, { deployment_ids: string[]; delete_tracing_project: boolean }>({
      method: 'delete',
      path: '/v2/deployments',
      operationId: 'deleteDeployments',
      summary: 'Delete up to 100 deployments; 207 with a result per id unless every one was deleted',
      tag,
      auth: 'workspace',
      request: { query: bulkDeleteQuery },
      responses: {
        200: {
          description: 'Every deployment is being deleted (`{}`)',
          schema: Joi.object().max(0).id('BulkDeleteDone'),
        },
        207: {
          description: 'A result per id: 204 deleted, 404 not found in this workspace, 400 refused',
          schema: bulkDeleteResponse,
        },
      },
      handler: async (ctx) => {
        const results = [];
        // One transaction per id: a refused one leaves the others deleted.
        for (const id of [...new Set(ctx.query.deployment_ids)]) {
          try {
            await writes.run(workspaceOf(ctx), {}, async (m) => {
              await deployments.delete(m, workspaceOf(ctx), id, ctx.query.delete_tracing_project, ctx.requestId);
              return noContent();
            });
            results.push({ deployment_id: id, status: 204 });
          } catch (err) {
            if (!(err instanceof AppError) || (err.status !== 404 && err.status !== 400)) throw err;
            results.push({ deployment_id: id, status: err.status, detail: err.message });
          }
        }
        return results.every((r) => r.status === 204) ? ok({}) : { status: 207, body: { results } };
      },
    }),
    defineRoute<DeploymentParams>({
      method: 'get',
      path: '/v2/deployments/:deployment_id',
      operationId: 'getDeployment',
      summary: 'Get a deployment',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams },
      responses: { 200: { description: 'The deployment', schema: deploymentResponse }, 404: notFound },
      handler: async (ctx) => ok(await deployments.get(workspaceOf(ctx), ctx.params.deployment_id)),
    }),
    defineRoute<DeploymentParams, {}, PatchDeploymentBody>({
      method: 'patch',
      path: '/v2/deployments/:deployment_id',
      operationId: 'updateDeployment',
      summary: 'Update a deployment; secrets, source_revision_config or resource_spec make a new revision',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, body: patchDeploymentBody, headers: idempotencyHeaders },
      responses: {
        200: {
          description: 'The deployment; `latest_revision_id` is the new revision if one was made',
          schema: deploymentResponse,
        },
        400: { description: 'An immutable field changed, or the deployment is being deleted' },
        403: servingAuthForbidden,
        404: notFound,
        503: registryUnavailable,
      },
      handler: (ctx) => {
        assertMaySetServingAuth(ctx);
        return writes.run(workspaceOf(ctx), idempotencyOf(ctx, 'updateDeployment'), async (m) =>
          ok(await deployments.patch(m, workspaceOf(ctx), ctx.params.deployment_id, ctx.body, ctx.requestId)),
        );
      },
    }),
    defineRoute<DeploymentParams, { delete_tracing_project: boolean }>({
      method: 'delete',
      path: '/v2/deployments/:deployment_id',
      operationId: 'deleteDeployment',
      summary: 'Delete a deployment: AWAITING_DELETE, then gone once its compute and database are torn down',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, query: deleteDeploymentQuery },
      responses: { 204: { description: 'Deletion accepted' }, 404: notFound },
      handler: async (ctx) => {
        await writes.run(workspaceOf(ctx), {}, async (m) => {
          await deployments.delete(
            m,
            workspaceOf(ctx),
            ctx.params.deployment_id,
            ctx.query.delete_tracing_project,
            ctx.requestId,
          );
          return noContent();
        });
        return noContent();
      },
    }),
    defineRoute<DeploymentParams, {}, PatchDeploymentBody>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/revisions',
      operationId: 'createRevision',
      summary: 'Create a revision from the revision fields PATCH takes, even when none changed',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, body: patchDeploymentBody, headers: idempotencyHeaders },
      responses: {
        201: { description: 'The new revision', schema: revisionResponse },
        400: { description: 'An immutable field changed, nothing to build, or the deployment is being deleted' },
        403: servingAuthForbidden,
        404: notFound,
        503: registryUnavailable,
      },
      handler: (ctx) => {
        assertMaySetServingAuth(ctx);
        return writes.run(workspaceOf(ctx), idempotencyOf(ctx, 'createRevision'), async (m) => {
          const deployment = await deployments.patch(
            m,
            workspaceOf(ctx),
            ctx.params.deployment_id,
            ctx.body,
            ctx.requestId,
            'api_revision',
          );
          return created(await revisions.getIn(m, deployment.id, deployment.latest_revision_id!));
        });
      },
    }),
    defineRoute<DeploymentParams, { limit: number; offset: number; status?: string[]; remote_reconciled?: boolean }>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/revisions',
      operationId: 'listRevisions',
      summary: 'List revisions of a deployment, newest first',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, query: listRevisionsQuery },
      responses: { 200: { description: 'A page of revisions', schema: revisionList }, 404: notFound },
      handler: async (ctx) =>
        ok(
          envelope(
            await revisions.list(
              workspaceOf(ctx),
              ctx.params.deployment_id,
              { statuses: ctx.query.status, remoteReconciled: ctx.query.remote_reconciled },
              ctx.query,
            ),
            ctx.query,
          ),
        ),
    }),
    defineRoute<RevisionParams>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/revisions/:revision_id',
      operationId: 'getRevision',
      summary: 'Get a revision (poll its status until DEPLOYED)',
      tag,
      auth: 'workspace',
      request: { params: revisionParams },
      responses: { 200: { description: 'The revision', schema: revisionResponse }, 404: notFound },
      handler: async (ctx) =>
        ok(await revisions.get(workspaceOf(ctx), ctx.params.deployment_id, ctx.params.revision_id)),
    }),
    defineRoute<RevisionParams>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/revisions/:revision_id/redeploy',
      operationId: 'redeployRevision',
      summary: "Roll out a new revision reusing this revision's artifact, config and secrets (no rebuild)",
      tag,
      auth: 'workspace',
      request: { params: revisionParams, headers: idempotencyHeaders },
      responses: {
        200: { description: 'The deployment; `latest_revision_id` is the new revision', schema: deploymentResponse },
        400: { description: 'The revision was never built' },
        404: notFound,
      },
      handler: (ctx) =>
        writes.run(workspaceOf(ctx), idempotencyOf(ctx, 'redeployRevision'), async (m) =>
          ok(
            await revisions.redeploy(
              m,
              workspaceOf(ctx),
              ctx.params.deployment_id,
              ctx.params.revision_id,
              ctx.requestId,
            ),
          ),
        ),
    }),
    ...(['interruption', 'interrupt'] as const).map((action) =>
      defineRoute<RevisionParams>({
        method: 'post',
        path: `/v2/deployments/:deployment_id/revisions/:revision_id/${action}`,
        operationId: action === 'interruption' ? 'interruptRevision' : 'interruptRevisionAlias',
        summary:
          `Stop a revision in progress; the active revision keeps ` +
          `serving${action === 'interrupt' ? ' (alias of /interruption)' : ''}`,
        tag,
        auth: 'workspace',
        request: { params: revisionParams },
        responses: {
          200: { description: 'The interrupted revision', schema: revisionResponse },
          400: { description: 'The revision already finished' },
          404: notFound,
        },
        handler: (ctx) =>
          writes.run(workspaceOf(ctx), {}, async (m) =>
            ok(await revisions.interrupt(m, workspaceOf(ctx), ctx.params.deployment_id, ctx.params.revision_id)),
          ),
      }),
    ),
  ];
}
