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
import { envelope, type PaginationQuery } from '../schemas/common.schema.js';
import {
  createdOutboundWebhookResponse,
  createOutboundWebhookBody,
  listOutboundWebhooksQuery,
  outboundWebhookList,
  outboundWebhookParams,
  outboundWebhookResponse,
  patchOutboundWebhookBody,
  webhookDeliveryList,
  webhookDeliveryParams,
  webhookDeliveryResponse,
  type CreateOutboundWebhookBody,
  type PatchOutboundWebhookBody,
} from '../schemas/outbound-webhook.schema.js';
import type { OutboundWebhookService, OutboundWebhookView } from '../services/outbound-webhook.service.js';

type WebhookParams = { webhook_id: string };
type DeliveryParams = WebhookParams & { delivery_id: string };

const tag = 'Webhooks';
const notFound = { description: 'Webhook not found in this workspace' };
const refusedUrl = { description: 'Invalid body, or a URL the outbound rules refuse (private address, plain http)' };

/**
 * A receiver URL can itself be a credential (a Slack-style URL carries its token in the path):
 * only admins, who manage webhooks, see it whole; other keys see where events go, its origin.
 */
function forReader(ctx: RequestContext<any, any, any>, webhook: OutboundWebhookView): OutboundWebhookView {
  if (principalOf(ctx).role === 'admin') return webhook;
  return { ...webhook, url: `${new URL(webhook.url).origin}/…` };
}

/** Signed outbound webhooks of the workspace (docs/api.md, Events and webhooks). Changes need an admin key. */
export function outboundWebhookRoutes(webhooks: OutboundWebhookService): RouteSpec[] {
  return [
    defineRoute<{}, {}, CreateOutboundWebhookBody>({
      method: 'post',
      path: '/v2/webhooks',
      operationId: 'createWebhook',
      summary: 'Subscribe a URL to event types; the signing secret is returned only here',
      tag,
      auth: 'workspace',
      admin: true,
      request: { body: createOutboundWebhookBody },
      responses: {
        201: { description: 'Created, with its secret', schema: createdOutboundWebhookResponse },
        422: refusedUrl,
      },
      handler: async (ctx) => created(await webhooks.create(workspaceOf(ctx), ctx.body)),
    }),
    defineRoute<{}, PaginationQuery>({
      method: 'get',
      path: '/v2/webhooks',
      operationId: 'listWebhooks',
      summary: 'List webhooks, oldest first',
      tag,
      auth: 'workspace',
      request: { query: listOutboundWebhooksQuery },
      responses: { 200: { description: 'A page of webhooks', schema: outboundWebhookList } },
      handler: async (ctx) =>
        ok(
          envelope(
            (await webhooks.list(workspaceOf(ctx), ctx.query)).map((w) => forReader(ctx, w)),
            ctx.query,
          ),
        ),
    }),
    defineRoute<WebhookParams>({
      method: 'get',
      path: '/v2/webhooks/:webhook_id',
      operationId: 'getWebhook',
      summary: 'Get a webhook',
      tag,
      auth: 'workspace',
      request: { params: outboundWebhookParams },
      responses: { 200: { description: 'The webhook', schema: outboundWebhookResponse }, 404: notFound },
      handler: async (ctx) => ok(forReader(ctx, await webhooks.get(workspaceOf(ctx), ctx.params.webhook_id))),
    }),
    defineRoute<WebhookParams, {}, PatchOutboundWebhookBody>({
      method: 'patch',
      path: '/v2/webhooks/:webhook_id',
      operationId: 'updateWebhook',
      summary: "Change a webhook's URL, event types, deployments or description",
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: outboundWebhookParams, body: patchOutboundWebhookBody },
      responses: {
        200: { description: 'The updated webhook', schema: outboundWebhookResponse },
        404: notFound,
        422: refusedUrl,
      },
      handler: async (ctx) => ok(await webhooks.patch(workspaceOf(ctx), ctx.params.webhook_id, ctx.body)),
    }),
    defineRoute<WebhookParams>({
      method: 'delete',
      path: '/v2/webhooks/:webhook_id',
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook with its delivery history; queued deliveries are dropped',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: outboundWebhookParams },
      responses: { 204: { description: 'Deleted' }, 404: notFound },
      handler: async (ctx) => {
        await webhooks.delete(workspaceOf(ctx), ctx.params.webhook_id);
        return noContent();
      },
    }),
    defineRoute<WebhookParams, PaginationQuery>({
      method: 'get',
      path: '/v2/webhooks/:webhook_id/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: "A webhook's deliveries, newest event first, each with every attempt",
      tag,
      auth: 'workspace',
      request: { params: outboundWebhookParams, query: listOutboundWebhooksQuery },
      responses: { 200: { description: 'A page of deliveries', schema: webhookDeliveryList }, 404: notFound },
      handler: async (ctx) =>
        ok(envelope(await webhooks.deliveries(workspaceOf(ctx), ctx.params.webhook_id, ctx.query), ctx.query)),
    }),
    defineRoute<WebhookParams>({
      method: 'post',
      path: '/v2/webhooks/:webhook_id/test',
      operationId: 'testWebhook',
      summary: 'Send this webhook alone a signed `webhook.test` delivery; poll its history for the outcome',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: outboundWebhookParams },
      responses: {
        202: { description: 'Queued: the test delivery, pending', schema: webhookDeliveryResponse },
        404: notFound,
      },
      handler: async (ctx) => ({
        status: 202,
        body: await webhooks.test(workspaceOf(ctx), ctx.params.webhook_id, principalOf(ctx).subject),
      }),
    }),
    defineRoute<DeliveryParams>({
      method: 'post',
      path: '/v2/webhooks/:webhook_id/deliveries/:delivery_id/redeliver',
      operationId: 'redeliverWebhookDelivery',
      summary: 'Send a succeeded or failed delivery again (a new round, same webhook-id)',
      tag,
      auth: 'workspace',
      admin: true,
      request: { params: webhookDeliveryParams },
      responses: {
        202: { description: 'Queued: the delivery, pending again', schema: webhookDeliveryResponse },
        404: { description: 'Webhook or delivery not found in this workspace' },
        409: { description: 'The delivery is still being attempted' },
      },
      handler: async (ctx) => ({
        status: 202,
        body: await webhooks.redeliver(workspaceOf(ctx), ctx.params.webhook_id, ctx.params.delivery_id),
      }),
    }),
  ];
}
