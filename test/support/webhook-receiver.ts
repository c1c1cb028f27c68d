import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

export interface WebhookReceiver {
  url: string;
  /** Every request, in arrival order. */
  received: Received[];
  close: () => Promise<void>;
}

/** A webhook receiver on loopback that answers 200 to every POST and keeps what it got. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Whether `r` carries a valid Standard Webhooks signature made with `secret` (`whsec_…`). */
export const signatureOk = (r: Received, secret: string) =>
  r.headers['webhook-signature'] ===
  `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`)
    .digest('base64')}`;
