import Joi from 'joi';
import { listEnvelope, paginationQuery, timestamp, uuid } from './common.schema.js';
import { EVENT_TYPES, eventResponse, type EventType } from './event.schema.js';

/** The event of a delivery: a workspace event, or the synthetic event of a test delivery. */
const deliveredEvent = eventResponse
  .keys({
    type: Joi.string()
      .valid(...EVENT_TYPES, 'webhook.test')
      .required(),
  })
  .id('DeliveredEvent');

const url = Joi.string()
  .uri({ scheme: ['http', 'https'] })
  .max(2048)
  .description(
    'Receiver URL: https, or http to a host allow-listed in SLIPWAY_OUTBOUND_ALLOW_HOSTS; never a private address unless allow-listed',
  );
const eventTypes = Joi.array()
  .items(Joi.string().valid(...EVENT_TYPES))
  .min(1)
  .unique()
  .description('Event types delivered');
const deploymentIds = Joi.array()
  .items(uuid())
  .min(1)
  .max(100)
  .unique()
  .allow(null)
  .description("Only these deployments' events; null or absent: every deployment of the workspace");
const description = Joi.string().max(1000).allow(null, '');
const format = Joi.string()
  .valid('standard', 'slack')
  .description(
    '`standard`: the event as JSON (default); `slack`: a Slack incoming-webhook message `{"text"}` describing it',
  );

export const createOutboundWebhookBody = Joi.object({
  url: url.required(),
  event_types: eventTypes.required(),
  deployment_ids: deploymentIds,
  description,
  format: format.default('standard'),
})
  .required()
  .id('CreateWebhook');

export const patchOutboundWebhookBody = Joi.object({
  url,
  event_types: eventTypes,
  deployment_ids: deploymentIds,
  description,
  format,
})
  .min(1)
  .required()
  .id('PatchWebhook');

export const outboundWebhookParams = Joi.object({ webhook_id: uuid().required() });
export const webhookDeliveryParams = Joi.object({ webhook_id: uuid().required(), delivery_id: uuid().required() });
export const listOutboundWebhooksQuery = Joi.object(paginationQuery);

export const outboundWebhookResponse = Joi.object({
  id: uuid().required(),
  url: Joi.string().required(),
  format: Joi.string().valid('standard', 'slack').required(),
  description: Joi.string().allow(null).required(),
  event_types: Joi.array().items(Joi.string()).required(),
  deployment_ids: Joi.array().items(uuid()).allow(null).required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('Webhook');

export const createdOutboundWebhookResponse = outboundWebhookResponse
  .keys({
    secret: Joi.string()
      .required()
      .description('`whsec_<base64>`: shown only in this response; verify signatures with it'),
  })
  .id('CreatedWebhook');

export const outboundWebhookList = listEnvelope(outboundWebhookResponse, 'WebhookList');

const attemptResponse = Joi.object({
  round: Joi.number().integer().required().description('0, then one more per redelivery'),
  attempt: Joi.number().integer().required().description('1-based within the round'),
  attempted_at: timestamp().required(),
  duration_ms: Joi.number().integer().required(),
  response_status: Joi.number().integer().allow(null).required().description('null when no answer came'),
  error: Joi.string().allow(null).required(),
}).id('WebhookDeliveryAttempt');

export const webhookDeliveryResponse = Joi.object({
  id: uuid().required().description('Also the `webhook-id` header: the same for every attempt and redelivery'),
  webhook_id: uuid().required(),
  event_id: Joi.string().required(),
  event_type: Joi.string().required().description("The event's type; `webhook.test` for a test delivery"),
  status: Joi.string().valid('pending', 'succeeded', 'failed').required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  event: deliveredEvent
    .required()
    .description('The event delivered (the body, for the `standard` format); `webhook.test` for a test delivery'),
  attempts: Joi.array().items(attemptResponse).required().description('Every attempt, oldest first'),
}).id('WebhookDelivery');

export const webhookDeliveryList = listEnvelope(webhookDeliveryResponse, 'WebhookDeliveryList');

export interface CreateOutboundWebhookBody {
  url: string;
  format?: 'standard' | 'slack';
  event_types: EventType[];
  deployment_ids?: string[] | null;
  description?: string | null;
}

export type PatchOutboundWebhookBody = Partial<CreateOutboundWebhookBody>;
