import { UnrecoverableError, type Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '@slipway/config';
import { signWebhook, type SecretsCodec } from '@slipway/crypto';
import { OutboundWebhookRepository, type DataSource, type PublicEvent } from '@slipway/db';
import { createJobConsumer, QUEUES, type JobHandler } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { guardedFetch, OutboundError } from '@slipway/net';
import { slackMessage } from './slack-message.js';

/** Deliveries in flight per process: they mostly wait on receivers. */
const WEBHOOK_CONCURRENCY = 16;

/** A receiver's answer body is not kept; reading a little of it is enough to end the exchange. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The message with the URL's path cut off: a receiver's path can be its credential (a Slack
 * incoming-webhook URL is), and attempt errors are listed, logged and kept by BullMQ.
 */
function withoutPath(message: string, raw: string): string {
  const url = new URL(raw);
  return url.pathname.length > 1 ? message.split(`${url.origin}${url.pathname}`).join(`${url.origin}/…`) : message;
}

/** The `webhook` backoff of the `webhooks` queue: base, 2×base, 4×base, … */
export const webhookBackoff = (baseMs: number) => (attemptsMade: number) => baseMs * 2 ** Math.max(0, attemptsMade - 1);

/**
 * Sends one delivery (docs/api.md, Events and webhooks): signed POST of the event (or, for the `slack` format, a Slack
 * message saying it) to the webhook's URL through the SSRF guard, the attempt recorded whatever happens. A 2xx ends the
 * round as `succeeded`; anything else throws so BullMQ retries with backoff, and the last attempt (or a URL the guard
 * refuses, which no retry can fix) ends it as `failed`. A job of an older round, or of a deleted delivery, does
 * nothing.
 */
export function deliverWebhookProcessor(
  dataSource: DataSource,
  secrets: SecretsCodec,
  config: Pick<Config, 'outbound' | 'webhooks'>,
): JobHandler<'deliver.webhook'> {
  return async ({ deliveryId, round }, { job, log }) => {
    const repo = new OutboundWebhookRepository(dataSource.manager);
    const target = await repo.target(deliveryId);
    if (!target || target.delivery.round !== round || target.delivery.status !== 'pending') return;
    const { delivery } = target;
    const attempt = job.attemptsMade + 1;
    const lastAttempt = attempt >= (job.opts.attempts ?? 1);
    const event = delivery.payload as PublicEvent;
    const body = JSON.stringify(target.format === 'slack' ? slackMessage(event) : event);
    const secret = secrets.open(target.secret_sealed, delivery.webhook_id);
    const headers = {
      'content-type': 'application/json',
      // Not chunked: some receivers (and proxies in front of them) refuse bodies without a length.
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'Slipway-Webhooks/1',
      ...signWebhook(secret, delivery.id, Math.floor(Date.now() / 1000), body),
    };

    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    let refused = false;
    try {
      const answer = await guardedFetch(target.url, {
        policy: config.outbound,
        method: 'POST',
        headers,
        body,
        timeoutMs: config.webhooks.timeoutMs,
        maxBodyBytes: MAX_ANSWER_BYTES,
      });
      status = answer.status;
      if (status < 200 || status > 299) error = `answered ${status}`;
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      error = withoutPath(err.message, target.url);
      refused = err.code === 'refused';
    }
    await repo.recordAttempt(delivery.id, {
      round,
      attempt,
      duration_ms: Math.round(performance.now() - started),
      response_status: status,
      error,
    });
    if (!error) {
      await repo.finish(delivery.id, round, 'succeeded');
      return;
    }
    log.info({ deliveryId, attempt, status, refused }, 'webhook delivery attempt failed');
    if (refused || lastAttempt) await repo.finish(delivery.id, round, 'failed');
    if (refused) throw new UnrecoverableError(`webhook URL refused: ${error}`);
    throw new Error(`webhook delivery failed: ${error}`);
  };
}

export interface WebhookWorkerOptions {
  config: Readonly<Config>;
  dataSource: DataSource;
  /** A waiting connection (`maxRetriesPerRequest: null`). */
  connection: Redis;
  secrets: SecretsCodec;
  log: Logger;
}

/**
 * The worker of the `webhooks` queue. Unlike builds and rollouts, a stalled delivery is simply
 * sent again (receivers dedupe on `webhook-id`), and retries are BullMQ's, with the `webhook`
 * backoff.
 */
export function createWebhookWorker({ config, dataSource, connection, secrets, log }: WebhookWorkerOptions): Worker {
  const worker = createJobConsumer({
    queue: QUEUES.webhooks,
    handlers: { 'deliver.webhook': deliverWebhookProcessor(dataSource, secrets, config) },
    connection,
    prefix: config.queuePrefix,
    concurrency: WEBHOOK_CONCURRENCY,
    log,
    options: { maxStalledCount: 1, settings: { backoffStrategy: webhookBackoff(config.webhooks.retryBaseMs) } },
  });
  // A job that ends failed without its handler saying so (stalled past the limit, a bad
  // payload, the database away on the last attempt) must not leave its round `pending`
  // forever: that would block redelivery. `finish` only ends the round still running.
  worker.on('failed', (job, err) => {
    if (!job || job.name !== 'deliver.webhook') return;
    const final =
      err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(err.message);
    const { deliveryId, round } = job.data as { deliveryId?: unknown; round?: unknown };
    if (!final || typeof deliveryId !== 'string' || typeof round !== 'number') return;
    new OutboundWebhookRepository(dataSource.manager)
      .finish(deliveryId, round, 'failed')
      .catch((e: unknown) => log.warn({ err: e, deliveryId }, 'could not mark a failed webhook delivery'));
  });
  return worker;
}
