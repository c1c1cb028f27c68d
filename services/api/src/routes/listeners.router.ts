import { created, defineRoute, noContent, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { envelope, type PaginationQuery } from '../schemas/common.schema.js';
import {
  createListenerBody,
  listenerList,
  listenerParams,
  listenerResponse,
  listListenersQuery,
  patchListenerBody,
  putListenerBody,
  type CreateListenerBody,
  type PatchListenerBody,
} from '../schemas/listener.schema.js';
import type { ListenerService } from '../services/listener.service.js';

type Params = { listener_id: string };
const tag = 'Listeners';
const notFound = { description: 'Listener not found in this workspace' };
const adminOnly = { description: 'Credentials not allowed here, or not an admin (listener writes are admin-only)' };

/**
 * Reads are open to any workspace key; writes need an admin: a listener decides where deployments
 * run and how freely (its namespaces, its `pod_policy`), so a member must not widen it.
 */

export function listenerRoutes(listeners: ListenerService): RouteSpec[] {
  return [
    defineRoute<{}, {}, CreateListenerBody>({
      method: 'post',
      path: '/v2/listeners',
      operationId: 'createListener',
      summary: 'Create a listener',
      tag,
      auth: 'workspace',
      admin: true,
      request: { body: createListenerBody },
      responses: {
        201: { description: 'Created', schema: listenerResponse },
        403: adminOnly,
        409: { description: 'A listener with this compute_id exists in the workspace' },
      },
      handler: async (ctx) => created(await listeners.create(workspaceOf(ctx), ctx.body)),
    }),
    defineRoute<{}, PaginationQuery>({
      method: 'get',
      path: '/v2/listeners',
      operationId: 'listListeners',
      summary: 'List listeners, newest first',
      tag,
      auth: 'workspace',
      request: { query: listListenersQuery },
      responses: { 200: { description: 'A page of listeners', schema: listenerList } },
      handler: async (ctx) => ok(envelope(await listeners.list(workspaceOf(ctx), ctx.query), ctx.query)),
    }),
    defineRoute<Params>({
      method: 'get',
      path: '/v2/listeners/:listener_id',
      operationId: 'getListener',
      summary: 'Get a listener',
      tag,
      auth: 'workspace',
      request: { params: listenerParams },
      responses: { 200: { description: 'The listener', schema: listenerResponse }, 404: notFound },
      handler: async (ctx) => ok(await listeners.get(workspaceOf(ctx), ctx.params.listener_id)),
    }),
    defineRoute<Params, {}, PatchListenerBody>({
      method: 'patch',
      path: '/v2/listeners/:listener_id',
      operationId: 'patchListener',
      summary: 'Change compute_config and/or version',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: listenerParams, body: patchListenerBody },
      responses: {
        200: { description: 'The updated listener', schema: listenerResponse },
        400: { description: 'compute_type or compute_id changed' },
        403: adminOnly,
        404: notFound,
      },
      handler: async (ctx) => ok(await listeners.patch(workspaceOf(ctx), ctx.params.listener_id, ctx.body)),
    }),
    defineRoute<Params, {}, CreateListenerBody>({
      method: 'put',
      path: '/v2/listeners/:listener_id',
      operationId: 'replaceListener',
      summary: 'Replace a listener (compute_type and compute_id must stay the same)',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: listenerParams, body: putListenerBody },
      responses: {
        200: { description: 'The updated listener', schema: listenerResponse },
        400: { description: 'compute_type or compute_id changed' },
        403: adminOnly,
        404: notFound,
      },
      handler: async (ctx) => ok(await listeners.replace(workspaceOf(ctx), ctx.params.listener_id, ctx.body)),
    }),
    defineRoute<Params>({
      method: 'delete',
      path: '/v2/listeners/:listener_id',
      operationId: 'deleteListener',
      summary: 'Delete a listener',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: listenerParams },
      responses: { 204: { description: 'Deleted' }, 403: adminOnly, 404: notFound },
      handler: async (ctx) => {
        await listeners.delete(workspaceOf(ctx), ctx.params.listener_id);
        return noContent();
      },
    }),
  ];
}
