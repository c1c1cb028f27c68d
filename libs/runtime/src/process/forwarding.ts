import {
  Agent,
  request,
  validateHeaderValue,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerSocket } from '@slipway/net';

/**
 * How a request is relayed to one of a set of upstreams, shared by a deployment's serving proxy
 * (to its instances) and the edge (to the deployment's serving proxy): one implementation of the
 * forwarding rules — hop-by-hop headers, origin-form targets, one retry of a bodyless request
 * that never reached an upstream, upgrades that become tunnels only on a 101.
 */

/** One upstream requests may be sent to. */
export interface ProxyTarget {
  host: string;
  port: number;
}

/** Why a request was refused before anything was forwarded: the status and `detail` it is answered with. */
export interface AccessDenial {
  status: number;
  detail: string;
  headers?: Record<string, string>;
}

/** Who sent a request, as the upstream is told (`X-Forwarded-*`). */
export interface Forwarded {
  /** The client's address, appended to `X-Forwarded-For`; omitted when the list already ends with it (a trusted edge's). */
  address: string | undefined;
  /** The scheme the client used; `keep`: leave the one the request carries (default `http`). */
  proto: 'http' | 'https' | 'keep';
  /** Whether `address` is already the last entry of the request's `X-Forwarded-For`. */
  appended?: boolean;
}

/** RFC 9110 §9.2.2. Only those without a body are retried: a streamed body cannot be replayed. */
const RETRYABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** RFC 9110 §7.6.1: meaningful for one connection only, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** How long an idle keep-alive socket to an upstream is kept (under Node's default server keep-alive of 5 s). */
const IDLE_SOCKET_MS = 4_000;

const NO_INSTANCE = JSON.stringify({ detail: 'No healthy instance.' });

/** A forwarder's own changes to the headers it forwards, made in `forwardHeaders`' one copy. */
export interface HeaderEdits {
  /** Request headers (lower case) never copied: the forwarder states them itself, or not at all. */
  omit?: readonly string[];
  /** Set once the forwarding headers are added, over whatever is there; an undefined value sets nothing. */
  set?: Readonly<Record<string, string | undefined>>;
}

/**
 * The request headers an upstream gets: hop-by-hop ones (and those `Connection` names) dropped,
 * forwarding ones added, then the caller's `edits`. Only values Node will send are kept: a request
 * may lack `Host` (HTTP/1.0) or carry a value Node's parser let in but its client refuses to write.
 */
export function forwardHeaders(headers: IncomingHttpHeaders, via: Forwarded, edits?: HeaderEdits): IncomingHttpHeaders {
  const listed = headers.connection ? connectionTokens(headers.connection) : null;
  const omit = edits?.omit;
  const out: IncomingHttpHeaders = {};
  for (const name in headers) {
    const value = headers[name];
    if (
      value !== undefined &&
      !HOP_BY_HOP.has(name) &&
      !listed?.includes(name) &&
      !omit?.includes(name) &&
      sendable(name, value)
    )
      out[name] = value;
  }
  if (via.address && !via.appended)
    out['x-forwarded-for'] =
      typeof out['x-forwarded-for'] === 'string' ? `${out['x-forwarded-for']}, ${via.address}` : via.address;
  if (out['x-forwarded-host'] === undefined && typeof out.host === 'string') out['x-forwarded-host'] = out.host;
  if (via.proto === 'keep') out['x-forwarded-proto'] ??= 'http';
  else out['x-forwarded-proto'] = via.proto;
  for (const name in edits?.set) {
    const value = edits.set[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function sendable(name: string, value: string | string[]): boolean {
  try {
    for (const v of [value].flat()) validateHeaderValue(name, v);
    return true;
  } catch {
    return false;
  }
}

/**
 * The request target as an upstream gets it: origin form. A proxy may be sent the absolute form
 * (`GET http://host/path`, RFC 9112 §3.2.2); its path is what the instance serves. `*` (OPTIONS)
 * stays as is; anything else that is no path is refused (null).
 */
function originForm(url: string | undefined): string | null {
  if (!url) return null;
  if (url.startsWith('/') || url === '*') return url;
  if (!/^https?:\/\//i.test(url)) return null;
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return null;
  }
}

function connectionTokens(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

/** An answer's headers as the client gets them: as sent (names, order, repeats), hop-by-hop ones dropped; no object built. */
function relayedRawHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!HOP_BY_HOP.has(raw[i]!.toLowerCase())) out.push(raw[i]!, raw[i + 1]!);
  return out;
}

const BAD_TARGET: AccessDenial = {
  status: 400,
  detail: 'The request target must be a path (or an absolute http URL).',
};
const SEVERAL_HOSTS: AccessDenial = { status: 400, detail: 'The request has more than one Host header.' };

/** How many `Host` lines the request carries (Node keeps only the first; an upstream may read another). */
export function hostLines(req: IncomingMessage): number {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') hosts++;
  return hosts;
}

/**
 * Puts the request target in origin form, or refuses the request before anything reads it: a
 * target that is no path, or several `Host` lines (RFC 9112 §3.2).
 */
export function refuseTarget(req: IncomingMessage): AccessDenial | null {
  if (hostLines(req) > 1) return SEVERAL_HOSTS;
  const url = originForm(req.url);
  if (url === null) return BAD_TARGET;
  req.url = url;
  return null;
}

/** Answers a refused request itself (the body is drained so the connection may be kept). */
export function answerDenial(req: IncomingMessage, res: ServerResponse, denial: AccessDenial): void {
  const body = JSON.stringify({ detail: denial.detail });
  res
    .writeHead(denial.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...denial.headers,
    })
    .end(body);
  req.resume();
}

/** A target with its own keep-alive pool, made once per target and reused by every request to it. */
interface Upstream {
  target: ProxyTarget;
  key: string;
  agent: Agent;
}

/**
 * The upstreams of one destination, picked round robin. `setTargets` swaps the whole list at
 * once: a request picks its target when it arrives, so requests already forwarded finish where
 * they went and every later one goes to the new list — none sees a half-updated list.
 */
export class UpstreamPool {
  private targets: readonly Upstream[] = [];
  private listed: readonly ProxyTarget[] = [];
  private next = 0;
  /** One keep-alive pool per target, so a retired target's sockets can be dropped as a unit. */
  private readonly agents = new Map<string, Agent>();

  get current(): readonly ProxyTarget[] {
    return this.listed;
  }

  /** Replaces the target list atomically. Pools of targets no longer listed lose their idle sockets. */
  setTargets(targets: readonly ProxyTarget[]): void {
    this.listed = Object.freeze(targets.map((t) => ({ host: t.host, port: t.port })));
    this.targets = Object.freeze(
      this.listed.map((target) => ({ target, key: key(target), agent: this.agentFor(key(target)) })),
    );
    const keep = new Set(this.targets.map((u) => u.key));
    for (const [k, agent] of this.agents) {
      if (keep.has(k)) continue;
      // Busy sockets finish their request (the drain); idle ones would only go stale.
      for (const list of Object.values(agent.freeSockets)) for (const s of list ?? []) s.destroy();
      this.agents.delete(k);
      // Requests in flight keep a reference to the agent; it is garbage once they end.
      setTimeout(() => agent.destroy(), 60_000).unref();
    }
  }

  /** Drops every keep-alive socket (the destination is gone). */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
    this.targets = [];
    this.listed = [];
  }

  pick(exclude?: Upstream): Upstream | null {
    const list = this.targets;
    if (!list.length) return null;
    for (let i = 0; i < list.length; i++) {
      const u = list[this.next++ % list.length]!;
      if (!exclude || u.key !== exclude.key || list.length === 1) return u;
    }
    return list[0]!;
  }

  /**
   * The keep-alive pool of a target, made when it is first listed (Nagle off: a proxy forwards
   * what it has at once). An idle socket is closed after IDLE_SOCKET_MS, before a Node server
   * behind (5 s by default) closes it: a request written onto a socket the server is closing
   * fails, and one with a body cannot be retried.
   */
  private agentFor(k: string): Agent {
    let agent = this.agents.get(k);
    if (!agent) {
      agent = new Agent({
        keepAlive: true,
        keepAliveMsecs: 1_000,
        scheduling: 'lifo',
        noDelay: true,
        timeout: IDLE_SOCKET_MS,
      } as ConstructorParameters<typeof Agent>[0]);
      this.agents.set(k, agent);
    }
    return agent;
  }
}

/** Told of an upstream that did not answer (a warning; never request contents). */
export type UpstreamError = (err: Error, target: ProxyTarget | null) => void;

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
    answerSocket(client, 503, 'No healthy instance.', { 'retry-after': '1' });
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
  upstream.once('upgrade', (answer, tunnel, upstreamHead) => {
    client.write(statusLine(answer) + rawHeaderLines(answer.rawHeaders) + '\r\n');
    if (upstreamHead.length) client.write(upstreamHead);
    if (head.length) tunnel.write(head);
    tunnel.pipe(client).pipe(tunnel);
    tunnel.once('error', () => client.destroy());
    tunnel.once('close', () => client.destroy());
    client.once('close', () => tunnel.destroy());
  });
  upstream.once('response', (answer) => {
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
    answerSocket(client, 502, 'The instance did not answer.');
  });
  client.once('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
  upstream.end();
}

/** Answers a refused Upgrade and closes, so nothing else is ever read from this connection. */
export function refuseUpgrade(socket: Duplex, denial: AccessDenial): void {
  answerSocket(socket, denial.status, denial.detail, denial.headers);
}

function statusLine(res: IncomingMessage): string {
  return `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
}

function rawHeaderLines(raw: string[]): string {
  let out = '';
  for (let i = 0; i < raw.length; i += 2) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
}

function key(t: ProxyTarget): string {
  return `${t.host}:${t.port}`;
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined
    ? req.headers['content-length'] !== '0'
    : req.headers['transfer-encoding'] !== undefined;
}

/** The edge's token on each request it forwards to a serving proxy (libs/crypto edge-token.ts). */
export const EDGE_TOKEN_HEADER = 'x-slipway-edge';
/** The client address the edge saw, on each request it forwards to a serving proxy. */
export const EDGE_CLIENT_HEADER = 'x-slipway-client-address';

const clientAddresses = new WeakMap<IncomingMessage, string>();

/**
 * The address a request came from: the edge's word for it when the request came through the
 * edge (the serving proxy checked the edge's token), else the socket's peer. Rate limits and the
 * failed-authentication lockout count per this address.
 */
export function clientAddress(req: IncomingMessage): string | undefined {
  return clientAddresses.get(req) ?? req.socket.remoteAddress;
}

/**
 * How a serving proxy tells the instance who called: a request the edge forwarded (its token
 * checked by `trusted`) names the client address and scheme itself; any other request is its
 * socket's peer over plain HTTP. The edge's headers never reach the instance, and a caller that
 * forges them without the token is judged by its own socket.
 */
export function arrivedVia(
  req: IncomingMessage,
  trusted: ((token: string | undefined) => boolean) | undefined,
): Forwarded {
  const token = req.headers[EDGE_TOKEN_HEADER];
  const named = req.headers[EDGE_CLIENT_HEADER];
  delete req.headers[EDGE_TOKEN_HEADER];
  delete req.headers[EDGE_CLIENT_HEADER];
  if (token === undefined || !trusted?.(typeof token === 'string' ? token : undefined) || typeof named !== 'string') {
    return { address: req.socket.remoteAddress, proto: 'keep' };
  }
  clientAddresses.set(req, named);
  return { address: named, proto: req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http', appended: true };
}
