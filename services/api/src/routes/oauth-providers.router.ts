import { created, defineRoute, noContent, ok, principalOf, type RouteSpec } from '../http/route.js';
import {
  createOAuthProviderBody,
  oauthProviderList,
  oauthProviderResponse,
  patchOAuthProviderBody,
  providerParams,
  type CreateOAuthProviderBody,
  type PatchOAuthProviderBody,
} from '../schemas/oauth-provider.schema.js';
import type { OAuthProviderService } from '../services/oauth-provider.service.js';

type Params = { provider_id: string };
const tag = 'Auth';
const notFound = { description: 'OAuth provider not found in this organization' };

/** OAuth providers belong to the organization: reads for any key, writes for organization admins. */
export function oauthProviderRoutes(providers: OAuthProviderService): RouteSpec[] {
  const orgOf = (ctx: Parameters<RouteSpec['handler']>[0]) => principalOf(ctx).organizationId;
  return [
    defineRoute({
      method: 'get',
      path: '/v2/auth/providers',
      operationId: 'listOAuthProviders',
      summary: 'List OAuth providers of the organization',
      tag,
      auth: 'organization',
      responses: { 200: { description: 'All providers, newest first', schema: oauthProviderList } },
      handler: async (ctx) => ok(await providers.list(orgOf(ctx))),
    }),
    defineRoute<{}, {}, CreateOAuthProviderBody>({
      method: 'post',
      path: '/v2/auth/providers',
      operationId: 'createOAuthProvider',
      summary: 'Create an OAuth provider',
      tag,
      auth: 'organization',
      admin: 'organization',
      request: { body: createOAuthProviderBody },
      responses: {
        201: { description: 'Created', schema: oauthProviderResponse },
        409: { description: 'provider_id already used in the organization' },
      },
      handler: async (ctx) => created(await providers.create(orgOf(ctx), ctx.body)),
    }),
    defineRoute<Params>({
      method: 'get',
      path: '/v2/auth/providers/:provider_id',
      operationId: 'getOAuthProvider',
      summary: 'Get an OAuth provider',
      tag,
      auth: 'organization',
      request: { params: providerParams },
      responses: { 200: { description: 'The provider', schema: oauthProviderResponse }, 404: notFound },
      handler: async (ctx) => ok(await providers.get(orgOf(ctx), ctx.params.provider_id)),
    }),
    defineRoute<Params, {}, PatchOAuthProviderBody>({
      method: 'patch',
      path: '/v2/auth/providers/:provider_id',
      operationId: 'updateOAuthProvider',
      summary: 'Update an OAuth provider',
      tag,
      auth: 'organization',
      admin: 'organization',
      request: { params: providerParams, body: patchOAuthProviderBody },
      responses: { 200: { description: 'The updated provider', schema: oauthProviderResponse }, 404: notFound },
      handler: async (ctx) => ok(await providers.patch(orgOf(ctx), ctx.params.provider_id, ctx.body)),
    }),
    defineRoute<Params>({
      method: 'delete',
      path: '/v2/auth/providers/:provider_id',
      operationId: 'deleteOAuthProvider',
      summary: 'Delete an OAuth provider',
      tag,
      auth: 'organization',
      admin: 'organization',
      request: { params: providerParams },
      responses: { 204: { description: 'Deleted' }, 404: notFound },
      handler: async (ctx) => {
        await providers.delete(orgOf(ctx), ctx.params.provider_id);
        return noContent();
      },
    }),
  ];
}
