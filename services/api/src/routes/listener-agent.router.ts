import { defineRoute, ok, principalOf, type RouteSpec } from '../http/route.js';
import type { ListenerReport } from '@slipway/domain';
import {
  desiredStateHeaders,
  desiredStateResponse,
  reportBody,
  reportResponse,
} from '../schemas/listener-agent.schema.js';
import { listenerParams } from '../schemas/listener.schema.js';
import type { ListenerAgentService } from '../services/listener-agent.service.js';

type Params = { listener_id: string };
const tag = 'Listener agent';
const forbidden = { description: "Not a listener agent's key, or the key of another listener" };
const notFound = { description: 'Listener not found' };

/** docs/api.md, Listener agent protocol: the two endpoints a listener agent calls, with its own key, for its own listener. */
export function listenerAgentRoutes(agents: ListenerAgentService): RouteSpec[] {
  return [
    defineRoute<Params>({
      method: 'get',
      path: '/v2/listeners/:listener_id/desired-state',
      operationId: 'getListenerDesiredState',
      summary: 'What the listener should run: deployments to apply (with secret values and manifests) or delete',
      tag,
      auth: 'listener-agent',
      request: { params: listenerParams, headers: desiredStateHeaders },
      responses: {
        200: {
          description: 'The desired state, with an `ETag`; also records that the agent called in',
          schema: desiredStateResponse,
        },
        304: {
          description:
            '`If-None-Match` names the current ETag: the desired state is unchanged since that answer (no body); still a check-in',
        },
        403: forbidden,
        404: notFound,
      },
      handler: async (ctx) => {
        const { etag, json } = await agents.desiredState(
          principalOf(ctx),
          ctx.params.listener_id,
          ctx.headers['if-none-match'],
        );
        return json ? { status: 200, json, headers: { ETag: etag } } : { status: 304, headers: { ETag: etag } };
      },
    }),
    defineRoute<Params, {}, ListenerReport>({
      method: 'post',
      path: '/v2/listeners/:listener_id/reports',
      operationId: 'reportListenerStatus',
      summary: 'Report revision outcomes and finished teardowns',
      tag,
      auth: 'listener-agent',
      request: { params: listenerParams, body: reportBody },
      responses: {
        200: { description: 'What was applied, deleted and rejected (with why)', schema: reportResponse },
        403: forbidden,
        404: notFound,
      },
      handler: async (ctx) => ok(await agents.report(principalOf(ctx), ctx.params.listener_id, ctx.body)),
    }),
  ];
}
