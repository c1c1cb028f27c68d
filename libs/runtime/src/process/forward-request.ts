import { request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { HOP_BY_HOP } from './forwarding.js';
import type { Upstream, UpstreamError, UpstreamPool } from './upstream-pool.js';

/** RFC 9110 §9.2.2. Only those without a body are retried: a streamed body cannot be replayed. */
const RETRYABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const NO_INSTANCE = JSON.stringify({ detail: 'No healthy instance.' });

/**
 * Forwards a plain request to an upstream of `pool` with `headers`. A GET/HEAD/OPTIONS that fails
 * to connect or loses its connection before any response byte (an instance closing its keep-alive
 * sockets as it retires) is retried once on another target, so a switch fails no request.
 */
export function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  pool: UpstreamPool,
  headers: IncomingHttpHeaders,
  onError: UpstreamError,
  failed?: Upstream,
): void {
  const upstreamTarget = pool.pick(failed);
  if (!upstreamTarget) {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(NO_INSTANCE);
    req.resume();
    return;
  }
  const { target, agent } = upstreamTarget;
  const bodyless = !hasBody(req);
  // A body of unknown length goes on chunked: Node's client frames a streamed body that way by
  // default for POST and PUT only, and would send a TRACE's, OPTIONS' or DELETE's bytes unframed.
  if (!bodyless && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
  const upstream = request({ host: target.host, port: target.port, method: req.method, path: req.url, headers, agent });
  let responded = false;
  // The client went away: stop talking to the upstream as well.
  const onClientGone = () => {
    if (!res.writableFinished) upstream.destroy();
  };
  res.once('close', onClientGone);
  upstream.once('response', (up) => {
    responded = true;
    // An app is as hostile as any client: an answer Node will not write (a status outside
    // 100-999) is a 502, never an exception in this listener.
    try {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, relayedRawHeaders(up.rawHeaders));
    } catch (err) {
      up.destroy();
      onError(err as Error, target);
      if (!res.headersSent)
        res
          .writeHead(502, { 'content-type': 'application/json' })
          .end(JSON.stringify({ detail: 'The instance sent an answer that cannot be relayed.' }));
      return;
    }
    up.pipe(res);
    up.once('error', () => res.destroy());
  });
  // An instance answering a plain request with 101: Node's client then ends the socket and emits
  // neither 'response' nor 'error', which left the client waiting for good.
  upstream.once('upgrade', (_up, socket) => {
    socket.destroy();
    res.off('close', onClientGone);
    onError(new Error('the instance switched protocols on a request that asked for no upgrade'), target);
    if (res.headersSent) res.destroy();
    else
      res
        .writeHead(502, { 'content-type': 'application/json' })
        .end(JSON.stringify({ detail: 'The instance sent an answer that cannot be relayed.' }));
  });
  upstream.once('error', (err) => {
    res.off('close', onClientGone);
    if (responded || res.destroyed) {
      res.destroy();
      return;
    }
    // Nothing reached the client yet and nothing must be replayed: one more try elsewhere.
    if (!failed && bodyless && RETRYABLE_METHODS.has(req.method ?? '')) {
      forwardRequest(req, res, pool, headers, onError, upstreamTarget);
      return;
    }
    onError(err, target);
    res
      .writeHead(502, { 'content-type': 'application/json' })
      .end(JSON.stringify({ detail: 'The instance did not answer.' }));
  });
  if (bodyless) upstream.end();
  else req.pipe(upstream);
}

/** An answer's headers as the client gets them: as sent (names, order, repeats), hop-by-hop ones dropped; no object built. */
function relayedRawHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!HOP_BY_HOP.has(raw[i]!.toLowerCase())) out.push(raw[i]!, raw[i + 1]!);
  return out;
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined
    ? req.headers['content-length'] !== '0'
    : req.headers['transfer-encoding'] !== undefined;
}
