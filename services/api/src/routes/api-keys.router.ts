import { created, defineRoute, noContent, ok, principalOf, type RouteSpec } from '../http/route.js';
import {
  apiKeyList,
  apiKeyParams,
  createApiKeyBody,
  createdApiKeyResponse,
  type CreateApiKeyBody,
} from '../schemas/api-key.schema.js';
import type { ApiKeyService } from '../services/api-key.service.js';

const tag = 'API keys';

/** Key management; admin keys only (docs/api.md, Authentication and tenancy). */
export function apiKeyRoutes(keys: ApiKeyService): RouteSpec[] {
  return [
    defineRoute<{}, {}, CreateApiKeyBody>({
      method: 'post',
      path: '/v2/api-keys',
      operationId: 'createApiKey',
      summary: 'Create an API key (the key is shown only in this response)',
      tag,
      auth: 'organization',
      admin: true,
      request: { body: createApiKeyBody },
      responses: {
        201: { description: 'Created', schema: createdApiKeyResponse },
        404: { description: 'listener_id names no listener of this workspace' },
      },
      handler: async (ctx) => created(await keys.create(principalOf(ctx), ctx.body)),
    }),
    defineRoute({
      method: 'get',
      path: '/v2/api-keys',
      operationId: 'listApiKeys',
      summary: 'List active API keys visible to the caller (never the keys themselves)',
      tag,
      auth: 'organization',
      admin: true,
      responses: { 200: { description: 'Keys, newest first', schema: apiKeyList } },
      handler: async (ctx) => ok(await keys.list(principalOf(ctx))),
    }),
    defineRoute<{ api_key_id: string }>({
      method: 'delete',
      path: '/v2/api-keys/:api_key_id',
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      tag,
      auth: 'organization',
      admin: true,
      request: { params: apiKeyParams },
      responses: { 204: { description: 'Revoked' }, 404: { description: 'No such active key visible to the caller' } },
      handler: async (ctx) => {
        await keys.revoke(principalOf(ctx), ctx.params.api_key_id);
        return noContent();
      },
    }),
  ];
}
