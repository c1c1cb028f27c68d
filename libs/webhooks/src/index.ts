export {
  createWebhookWorker,
  deliverWebhookProcessor,
  webhookBackoff,
  type WebhookWorkerOptions,
} from './deliver-webhook.processor.js';
export { FANOUT_WAKE_BATCH_MS, WebhookFanout } from './webhook-fanout.js';
