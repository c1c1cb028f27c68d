import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { workerConnection } from '@slipway/jobs';
import { createLogger } from '@slipway/logging';
import { createWebhookWorker, WebhookFanout } from '@slipway/webhooks';
import type { TestApi } from './test-api.js';

export interface ReceivedAt {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface WebhookHarness {
  /** The receiver's origin: webhooks point at `${receiverUrl}/<path>`. */
  receiverUrl: string;
  /** Every request the receiver got, in arrival order. */
  received: ReceivedAt[];
  fanout: WebhookFanout;
  /** Creates a webhook to `path` on the receiver (201 asserted); `body` adds to or overrides the defaults. */
  createWebhook: (path: string, body?: Record<string, unknown>) => Promise<any>;
  /** The webhook's deliveries (200 asserted), newest first. */
  deliveries: (webhookId: string) => Promise<any[]>;
  close: () => Promise<void>;
}

/**
 * The delivery side of outbound webhooks beside a test api: a receiver on loopback keeping
 * every request with its path (answered by `respond`, once the body is read), the fan-out, the
 * outbox relay and the `webhooks` worker on real Redis. The api must allow-list 127.0.0.1.
 */
export async function startWebhookHarness(
  api: TestApi,
  respond: (path: string, res: ServerResponse) => void,
): Promise<WebhookHarness> {
  const received: ReceivedAt[] = [];
  const receiver: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      respond(req.url!, res);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const log = createLogger({ name: 'webhooks-test', level: 'error' });
  const workerRedis = workerConnection(api.config.redisUrl, log);
  const worker = createWebhookWorker({
    config: api.config,
    dataSource: api.dataSource,
    connection: workerRedis,
    secrets: secretsCodec(api.config),
    log,
  });
  const fanout = new WebhookFanout(api.dataSource, log, 50);
  fanout.start();
  api.relay.start();
  return {
    receiverUrl,
    received,
    fanout,
    createWebhook: async (path, body = {}) => {
      const res = await api.http.post('/v2/webhooks', {
        url: `${receiverUrl}${path}`,
        event_types: ['deployment.created'],
        ...body,
      });
      expect(res.status, res.text).toBe(201);
      return res.body;
    },
    deliveries: async (webhookId) => {
      const res = await api.http.get(`/v2/webhooks/${webhookId}/deliveries?limit=100`);
      expect(res.status, res.text).toBe(200);
      return res.body.resources as any[];
    },
    close: async () => {
      await fanout.stop();
      await worker.close();
      workerRedis.disconnect();
      await new Promise((r) => receiver.close(r));
    },
  };
}
