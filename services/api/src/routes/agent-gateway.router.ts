import Joi from 'joi';
import { defineRoute, workspaceOf, type HttpMethod, type RouteSpec } from '../http/route.js';
import { uuid } from '../schemas/common.schema.js';
import type { AgentGateway } from '../services/agent-gateway.js';

const tag = 'Agent';
const params = Joi.object({
  deployment_id: uuid().required(),
  path: Joi.array()
    .items(Joi.string().max(1024))
    .min(1)
    .max(16)
    .required()
    .description('The LangGraph Server API path (`threads/search`)'),
});
const headers = Joi.object({
  'x-agent-authorization': Joi.string()
    .max(8192)
    .description('Sent as `Authorization` to a graph with its own auth handler (the credential that handler expects)'),
});
/** Any JSON the agent's API takes; the api's body limit applies. */
const body = Joi.any().required();
const answer = Joi.any().description("The agent's JSON answer, as it gave it");

/** The query string again, from its parsed form (repeated keys kept). */
function queryString(query: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    for (const v of Array.isArray(value) ? value : [value]) if (v != null) search.append(key, String(v));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * `/v2/deployments/{id}/agent/<LangGraph Server API path>` (docs/console.md, Agent): the caller's
 * call of a deployed agent, through the api (AgentGateway), so the console never calls an app's
 * origin. Every method the agent API uses; the answer is the agent's status and JSON.
 */
export function agentGatewayRoutes(gateway: AgentGateway): RouteSpec[] {
  const methods: HttpMethod[] = ['get', 'post', 'put', 'patch', 'delete'];
  return methods.map((method) =>
    defineRoute<{ deployment_id: string; path: string[] }, Record<string, unknown>, unknown>({
      method,
      path: '/v2/deployments/:deployment_id/agent/*path',
      operationId: `agentCall${method[0]!.toUpperCase()}${method.slice(1)}`,
      summary:
        `${method.toUpperCase()} a path of the deployment's LangGraph Server API with the caller's key ` +
        `(the console's way to its agent)`,
      tag,
      auth: 'workspace',
      request: {
        params,
        query: Joi.object().unknown(true),
        headers,
        ...(method === 'post' || method === 'put' || method === 'patch' ? { body } : {}),
      },
      responses: {
        200: { description: "The agent's answer (any status it gave, with its JSON)", schema: answer },
        403: { description: 'Signed in without an API key (the agent takes one)' },
        404: { description: 'No such deployment in this workspace, or not a LangGraph Server API path' },
        409: { description: 'No revision serving yet, or a deployment on a listener (call its URL)' },
        502: {
          description: 'The deployment could not be reached, or answered something other than JSON (at most 8 MiB)',
        },
        504: { description: 'The agent did not answer within 60 s' },
      },
      handler: async (ctx) => {
        const path = `/${ctx.params.path.map(encodeURIComponent).join('/')}${queryString(ctx.query)}`;
        const result = await gateway.call(workspaceOf(ctx), ctx.params.deployment_id, {
          method: method.toUpperCase(),
          path,
          body: method === 'get' || method === 'delete' ? undefined : ctx.body,
          apiKey: typeof ctx.headers['x-api-key'] === 'string' ? ctx.headers['x-api-key'] : null,
          agentAuthorization: ctx.headers['x-agent-authorization'] ?? null,
          clientAddress: ctx.clientAddress,
          requestId: ctx.requestId,
        });
        return {
          status: result.status,
          json: result.json,
          headers: { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' },
        };
      },
    }),
  );
}
