export {
  createWebhookWorker,
  deliverWebhookProcessor,
  webhookBackoff,
  type WebhookWorkerOptions,
} from './deliver-webhook.processor.js';
export { WebhookFanout } from './webhook-fanout.js';
