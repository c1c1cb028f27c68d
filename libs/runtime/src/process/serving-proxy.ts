import { Agent, createServer, request, validateHeaderValue, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerSocket, listenExclusive, serveWithin } from '@slipway/net';

/** One instance the proxy may send requests to. */
export interface ProxyTarget {
  host: string;
  port: number;
}

export interface ServingProxyOptions {
  host: string;
  port: number;
  /** Warnings (upstream errors); the proxy never logs request contents. */
  onError?: (err: Error, target: ProxyTarget | null) => void;
  /**
   * Told of a failure of the proxy's own handling that its error boundary answered (400 or 502):
   * a bug to fix, never a reason to stop serving every other request.
   */
  onFault?: (err: Error) => void;
  /**
   * Decides whether a request may reach the instances, before anything is forwarded: null lets
   * it through (with the headers it left on `req.headers`: only those are forwarded, upgrades
   * included), a denial is answered by the proxy itself. Called for every request of a
   * keep-alive connection and for every Upgrade. A check that throws denies (503).
   */
  authorize?: (req: IncomingMessage) => Promise<AccessDenial | null>;
  /**
   * Told of every plain HTTP request once its answer is complete or the client left: the status
   * sent (the proxy's own denials and 502/503 included; 499 when the client left before an
   * answer) and how long it took from arrival. Upgrades (WebSockets) are not requests here.
   */
  onRequest?: (outcome: RequestOutcome) => void;
}

/** One request as the proxy saw it (for per-deployment metrics). */
export interface RequestOutcome {
  status: number;
  durationMs: number;
}

/** Why the serving proxy refused a request: the status and `detail` it answers with. */
export interface AccessDenial {
  status: number;
  detail: string;
  headers?: Record<string, string>;
}

/** RFC 9110 §9.2.2. Only those without a body are retried: a streamed body cannot be replayed. */
const RETRYABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** RFC 9110 §7.6.1: meaningful for one connection only, never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

const NO_INSTANCE = JSON.stringify({ detail: 'No healthy instance.' });

/**
 * The request headers an instance gets: hop-by-hop ones (and those `Connection` names) dropped,
 * forwarding ones added. Only values Node will send are kept: a request may lack `Host` (HTTP/1.0)
 * or carry a value Node's parser let in but its client refuses to write.
 */
function forwardHeaders(headers: IncomingHttpHeaders, remote: string | undefined): IncomingHttpHeaders {
  const listed = headers.connection ? connectionTokens(headers.connection) : null;
  const out: IncomingHttpHeaders = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name) && !listed?.includes(name) && sendable(name, value)) out[name] = value;
  }
  if (remote) out['x-forwarded-for'] = typeof out['x-forwarded-for'] === 'string' ? `${out['x-forwarded-for']}, ${remote}` : remote;
  if (out['x-forwarded-host'] === undefined && typeof out.host === 'string') out['x-forwarded-host'] = out.host;
  out['x-forwarded-proto'] ??= 'http';
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
 * The request target as an instance gets it: origin form. A proxy may be sent the absolute form
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

/** A target with its own keep-alive pool, made once per target and reused by every request to it. */
interface Upstream {
  target: ProxyTarget;
  key: string;
  agent: Agent;
}

/**
 * The stable address of one cloud-hosted deployment (its `serving_port`): a reverse proxy that
 * spreads requests round robin over the deployment's healthy instances.
 *
 * A rollout switches traffic with `setTargets`, which swaps the whole list at once: a request
 * picks its target when it arrives, so requests already forwarded finish on the old instances
 * and every later one goes to the new ones — no request sees a half-updated list. Old instances
 * are stopped only after a drain period (the caller's job). A GET/HEAD/OPTIONS that fails to
 * connect or loses its connection before any response byte (an instance closing its keep-alive
 * sockets as it retires) is retried once on another target, so a switch fails no request.
 */
export class ServingProxy {
  private targets: readonly Upstream[] = [];
  private listed: readonly ProxyTarget[] = [];
  private next = 0;
  /** One keep-alive pool per target, so a retired target's sockets can be dropped as a unit. */
  private readonly agents = new Map<string, Agent>();
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly options: ServingProxyOptions) {
    // Every handler runs inside the boundary: a request it cannot handle is answered, never fatal.
    this.server = serveWithin(createServer(), {
      request: (req, res) => this.serve(req, res),
      upgrade: (req, socket, head) => this.serveUpgrade(req, socket, head),
      onError: (err) => this.options.onFault?.(err),
      failureStatus: 502,
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // Streams (SSE) may stay open for long; a request without any timeout is the app's business.
    this.server.requestTimeout = 0;
  }

  /** The port it listens on (the bound one when created with port 0). */
  get port(): number {
    const address = this.server.address();
    return address && typeof address === 'object' ? address.port : this.options.port;
  }

  get currentTargets(): readonly ProxyTarget[] {
    return this.listed;
  }

  listen(): Promise<void> {
    return listenExclusive(this.server, this.options.host, this.options.port);
  }

  /** Replaces the target list atomically. Pools of targets no longer listed lose their idle sockets. */
  setTargets(targets: readonly ProxyTarget[]): void {
    this.listed = Object.freeze(targets.map((t) => ({ host: t.host, port: t.port })));
    this.targets = Object.freeze(this.listed.map((target) => ({ target, key: key(target), agent: this.agentFor(key(target)) })));
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

  /** Stops listening and closes client connections (in-flight requests get a short grace). */
  async close(graceMs = 1_000): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    const timer = setTimeout(() => {
      for (const s of this.sockets) s.destroy();
    }, graceMs);
    await closed;
    clearTimeout(timer);
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.options.onRequest) this.measure(res, this.options.onRequest);
    const denial = refuseTarget(req) ?? (await this.admit(req));
    if (!denial) return this.handle(req, res);
    res.writeHead(denial.status, { 'content-type': 'application/json', ...denial.headers }).end(JSON.stringify({ detail: denial.detail }));
    req.resume();
  }

  private async serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const denial = refuseTarget(req) ?? (await this.admit(req));
    // Refused: answered and closed, so nothing else is ever read from this connection.
    if (denial) answerSocket(socket, denial.status, denial.detail, denial.headers);
    else this.upgrade(req, socket as Socket, head);
  }

  private measure(res: ServerResponse, report: (outcome: RequestOutcome) => void): void {
    const started = performance.now();
    res.once('close', () => {
      const status = res.headersSent ? res.statusCode : 499;
      report({ status, durationMs: performance.now() - started });
    });
  }

  private async admit(req: IncomingMessage): Promise<AccessDenial | null> {
    if (!this.options.authorize) return null;
    try {
      return await this.options.authorize(req);
    } catch (err) {
      this.options.onError?.(err as Error, null);
      return { status: 503, detail: 'The request could not be authorized right now; try again.', headers: { 'retry-after': '1' } };
    }
  }

  private pick(exclude?: Upstream): Upstream | null {
    const list = this.targets;
    if (!list.length) return null;
    for (let i = 0; i < list.length; i++) {
      const u = list[this.next++ % list.length]!;
      if (!exclude || u.key !== exclude.key || list.length === 1) return u;
    }
    return list[0]!;
  }

  /** The keep-alive pool of a target, made when it is first listed (Nagle off: a proxy forwards what it has at once). */
  private agentFor(k: string): Agent {
    let agent = this.agents.get(k);
    if (!agent) {
      agent = new Agent({ keepAlive: true, keepAliveMsecs: 1_000, scheduling: 'lifo', noDelay: true } as ConstructorParameters<typeof Agent>[0]);
      this.agents.set(k, agent);
    }
    return agent;
  }

  private handle(req: IncomingMessage, res: ServerResponse, failed?: Upstream): void {
    const upstreamTarget = this.pick(failed);
    if (!upstreamTarget) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(NO_INSTANCE);
      return;
    }
    const { target, agent } = upstreamTarget;
    const bodyless = !hasBody(req);
    const upstream = request({
      host: target.host,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: forwardHeaders(req.headers, req.socket.remoteAddress),
      agent,
    });
    let responded = false;
    // The client went away: stop talking to the instance as well.
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
        this.options.onError?.(err as Error, target);
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'The instance sent an answer that cannot be relayed.' }));
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
        this.handle(req, res, upstreamTarget);
        return;
      }
      this.options.onError?.(err, target);
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'The instance did not answer.' }));
    });
    if (bodyless) upstream.end();
    else req.pipe(upstream);
  }

  /**
   * WebSocket (and other Upgrade) requests, admitted like any other request and forwarded with
   * the same headers (what `authorize` left of them, hop-by-hop ones dropped). The connection
   * becomes a tunnel only once the instance answers 101: any other answer is relayed and the
   * connection closed, so no later request on it can reach the instance unchecked.
   */
  private upgrade(req: IncomingMessage, client: Socket, head: Buffer): void {
    const target = this.pick()?.target;
    if (!target) {
      answerSocket(client, 503, 'No healthy instance.', { 'retry-after': '1' });
      return;
    }
    const headers = forwardHeaders(req.headers, req.socket.remoteAddress);
    headers.connection = 'Upgrade';
    if (req.headers.upgrade !== undefined) headers.upgrade = req.headers.upgrade;
    const upstream = request({ host: target.host, port: target.port, method: req.method, path: req.url, headers, agent: false });
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
      for (const [name, value] of Object.entries(relayed)) for (const v of [value ?? []].flat()) lines += `${name}: ${v}\r\n`;
      // Without a length, the end of the connection ends the body (RFC 9112 §6.3).
      client.write(lines + 'connection: close\r\n\r\n');
      answer.pipe(client);
      answer.once('error', () => client.destroy());
    });
    upstream.once('error', (err) => {
      this.options.onError?.(err, target);
      answerSocket(client, 502, 'The instance did not answer.');
    });
    client.once('error', () => upstream.destroy());
    client.once('close', () => upstream.destroy());
    upstream.end();
  }
}

function statusLine(res: IncomingMessage): string {
  return `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
}

function rawHeaderLines(raw: string[]): string {
  let out = '';
  for (let i = 0; i < raw.length; i += 2) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
}

const BAD_TARGET: AccessDenial = { status: 400, detail: 'The request target must be a path (or an absolute http URL).' };
const SEVERAL_HOSTS: AccessDenial = { status: 400, detail: 'The request has more than one Host header.' };

/**
 * Puts the request target in origin form, or refuses the request before anything reads it: a
 * target that is no path, or several `Host` lines (RFC 9112 §3.2; Node keeps only the first, and
 * an app behind may read another).
 */
function refuseTarget(req: IncomingMessage): AccessDenial | null {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host' && ++hosts > 1) return SEVERAL_HOSTS;
  const url = originForm(req.url);
  if (url === null) return BAD_TARGET;
  req.url = url;
  return null;
}

function key(t: ProxyTarget): string {
  return `${t.host}:${t.port}`;
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
}
