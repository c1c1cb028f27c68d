import { defineRoute, noContent, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import {
  pushTokenResponse,
  registryEventsBody,
  registryTokenQuery,
  registryTokenResponse,
} from '../schemas/registry.schema.js';
import type { RegistryService } from '../services/registry.service.js';

const tag = 'Images';

/** The built-in registry's push tokens, token endpoint and event sink (docs/api.md, Images and the built-in registry). */
export function registryRoutes(registry: RegistryService): RouteSpec[] {
  return [
    defineRoute<{ deployment_id: string }>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/push-token',
      operationId: 'createPushToken',
      summary: "A push token for the deployment's images in the built-in registry (internal_docker deployments)",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams },
      responses: {
        200: { description: 'The token (valid 1 h by default) and where to push', schema: pushTokenResponse },
        400: { description: "Not an 'internal_docker' deployment, or it is being deleted" },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) => ok(await registry.issuePushToken(workspaceOf(ctx), ctx.params.deployment_id)),
    }),
    defineRoute<{}, { service?: string; scope?: string | string[] }>({
      method: 'get',
      path: '/v2/registry/token',
      operationId: 'getRegistryToken',
      summary:
        'The registry token endpoint (auth.token realm): Basic `oauth2accesstoken:<push token>` → a registry token for the granted scopes',
      tag,
      auth: 'none',
      request: { query: registryTokenQuery },
      responses: {
        200: {
          description:
            'A registry token granting the requested scopes the credential allows (none when no scope is asked)',
          schema: registryTokenResponse,
        },
        401: { description: 'No Basic credentials, or an invalid, expired or revoked push token' },
        403: { description: "Push asked while the workspace's images exceed its registry_bytes quota" },
      },
      handler: async (ctx) => {
        const scope = ctx.query.scope === undefined ? [] : ([] as string[]).concat(ctx.query.scope);
        return ok(await registry.exchange(ctx.headers.authorization as string | undefined, ctx.query.service, scope));
      },
    }),
    defineRoute<{}, {}, { events?: unknown[] }>({
      method: 'post',
      path: '/v2/registry/events',
      operationId: 'receiveRegistryEvents',
      summary: "The registry's push notifications (its own bearer credential): counts each workspace's registry bytes",
      tag,
      auth: 'none',
      request: { body: registryEventsBody },
      responses: { 204: { description: 'Recorded' }, 401: { description: 'Not the registry' } },
      handler: async (ctx) => {
        await registry.recordEvents(ctx.headers.authorization as string | undefined, ctx.body);
        return noContent();
      },
    }),
  ];
}
