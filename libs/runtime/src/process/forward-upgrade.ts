import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerSocket } from '@slipway/net';
import { HOP_BY_HOP, type AccessDenial } from './forwarding.js';
import type { UpstreamError, UpstreamPool } from './upstream-pool.js';

/**
 * Forwards an Upgrade (WebSocket) request with `headers` (hop-by-hop ones already dropped). The
 * connection becomes a tunnel only once the upstream answers 101: any other answer is relayed and
 * the connection closed, so no later request on it can reach the upstream unchecked.
 */
export function forwardUpgrade(
  req: IncomingMessage,
  client: Socket,
  head: Buffer,
  pool: UpstreamPool,
  headers: IncomingHttpHeaders,
  onError: UpstreamError,
): void {
  const target = pool.pick()?.target;
  if (!target) {
    answerSocket(client, 503, 'No healthy instance.', { headers: { 'retry-after': '1' }, method: req.method });
    return;
  }
  headers.connection = 'Upgrade';
  if (req.headers.upgrade !== undefined) headers.upgrade = req.headers.upgrade;
  const upstream = request({
    host: target.host,
    port: target.port,
    method: req.method,
    path: req.url,
    headers,
    agent: false,
  });
  // Once an answer began on the client's connection, a later upstream failure can only cut it.
  let answered = false;
  upstream.once('upgrade', (answer, tunnel, upstreamHead) => {
    answered = true;
    client.write(statusLine(answer) + rawHeaderLines(answer.rawHeaders) + '\r\n');
    if (upstreamHead.length) client.write(upstreamHead);
    if (head.length) tunnel.write(head);
    tunnel.pipe(client).pipe(tunnel);
    tunnel.once('error', () => client.destroy());
    tunnel.once('close', () => client.destroy());
    client.once('close', () => tunnel.destroy());
  });
  upstream.once('response', (answer) => {
    answered = true;
    const relayed = { ...answer.headers };
    for (const h of HOP_BY_HOP) delete relayed[h];
    let lines = statusLine(answer);
    for (const [name, value] of Object.entries(relayed))
      for (const v of [value ?? []].flat()) lines += `${name}: ${v}\r\n`;
    // Without a length, the end of the connection ends the body (RFC 9112 §6.3).
    client.write(lines + 'connection: close\r\n\r\n');
    answer.pipe(client);
    answer.once('error', () => client.destroy());
  });
  upstream.once('error', (err) => {
    onError(err, target);
    if (answered) client.destroy();
    else answerSocket(client, 502, 'The instance did not answer.', { method: req.method });
  });
  client.once('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
  upstream.end();
}

/** Answers a refused Upgrade and closes, so nothing else is ever read from this connection. */
export function refuseUpgrade(req: IncomingMessage, socket: Duplex, denial: AccessDenial): void {
  answerSocket(socket, denial.status, denial.detail, { headers: denial.headers, method: req.method });
}

function statusLine(res: IncomingMessage): string {
  return `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
}

function rawHeaderLines(raw: string[]): string {
  let out = '';
  for (let i = 0; i < raw.length; i += 2) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
}
