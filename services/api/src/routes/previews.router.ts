import { created, defineRoute, noContent, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import { deploymentList, deploymentResponse } from '../schemas/deployment-response.schema.js';
import {
  approvePreviewBody,
  openPreviewBody,
  previewParams,
  previewRequestList,
  type ApprovePreviewBody,
  type OpenPreviewBody,
} from '../schemas/preview.schema.js';
import type { PreviewService } from '../services/preview.service.js';

type DeploymentParams = { deployment_id: string };
type PreviewParams = DeploymentParams & { number: number };

const tag = 'Previews';

/** Previews per pull request of a repohost deployment, driven through the API (docs/api.md, Previews). */
export function previewRoutes(previews: PreviewService): RouteSpec[] {
  return [
    defineRoute<DeploymentParams, {}, OpenPreviewBody>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/previews',
      operationId: 'openPreview',
      summary: "Open a pull request's preview at its head, or roll the existing one out at the new head",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, body: openPreviewBody },
      responses: {
        201: {
          description: 'The new preview deployment; poll `latest_revision_id` until DEPLOYED',
          schema: deploymentResponse,
        },
        200: { description: 'The existing preview, rolling out the new head', schema: deploymentResponse },
        404: { description: 'Deployment not found in this workspace' },
        409: { description: 'Previews are not turned on, or the deployment (or that preview) is being deleted' },
        422: { description: 'The deployment is a preview itself' },
      },
      handler: async (ctx) => {
        const { view, created: isNew } = await previews.open(
          workspaceOf(ctx),
          ctx.params.deployment_id,
          ctx.body,
          ctx.requestId,
        );
        return isNew ? created(view) : ok(view);
      },
    }),
    defineRoute<DeploymentParams>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/previews',
      operationId: 'listPreviews',
      summary: "A deployment's previews, newest first",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams },
      responses: {
        200: { description: 'Its previews', schema: deploymentList },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) => {
        const all = await previews.list(workspaceOf(ctx), ctx.params.deployment_id);
        return ok({ resources: all, offset: all.length });
      },
    }),
    defineRoute<DeploymentParams>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/preview-requests',
      operationId: 'listPreviewRequests',
      summary: "Forks' pull requests waiting for an admin's approve (or the approval label), newest first",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams },
      responses: {
        200: { description: 'What waits, each with the head commit an approve builds', schema: previewRequestList },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) => ok({ resources: await previews.waiting(workspaceOf(ctx), ctx.params.deployment_id) }),
    }),
    defineRoute<PreviewParams, {}, ApprovePreviewBody>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/previews/:number/approve',
      operationId: 'approvePreview',
      summary:
        "Approve a fork's pull request waiting for it: its preview builds the head commit it was opened (or last pushed) with",
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: previewParams, body: approvePreviewBody },
      responses: {
        201: { description: 'The preview opened', schema: deploymentResponse },
        200: { description: 'The existing preview, rolling out the approved head', schema: deploymentResponse },
        403: { description: 'Admins only' },
        404: {
          description: 'No such deployment, or no pull request of it waiting for approval (at `head_sha`, when given)',
        },
        409: { description: 'Previews are off, or the deployment is being deleted' },
      },
      handler: async (ctx) => {
        const { view, created: isNew } = await previews.approve(
          workspaceOf(ctx),
          ctx.params.deployment_id,
          ctx.params.number,
          ctx.requestId,
          { headSha: ctx.body?.head_sha },
        );
        return isNew ? created(view) : ok(view);
      },
    }),
    defineRoute<PreviewParams>({
      method: 'delete',
      path: '/v2/deployments/:deployment_id/previews/:number',
      operationId: 'closePreview',
      summary: "Tear a pull request's preview down (its database and Redis keys go with it)",
      tag,
      auth: 'workspace',
      request: { params: previewParams },
      responses: { 204: { description: 'Its delete started' }, 404: { description: 'No such deployment or preview' } },
      handler: async (ctx) => {
        await previews.close(workspaceOf(ctx), ctx.params.deployment_id, ctx.params.number, ctx.requestId);
        return noContent();
      },
    }),
  ];
}
