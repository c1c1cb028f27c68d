import { validateHeaderValue, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * How a request is relayed to one of a set of upstreams, shared by a deployment's serving proxy
 * (to its instances) and the edge (to the deployment's serving proxy): one implementation of the
 * forwarding rules — hop-by-hop headers, origin-form targets, one retry of a bodyless request
 * that never reached an upstream, upgrades that become tunnels only on a 101. This file holds the
 * rules every forward shares (headers, targets, refusals); the upstreams are `upstream-pool.ts`,
 * the two ways of forwarding `forward-request.ts` and `forward-upgrade.ts`, and who the client is
 * when the edge forwarded `edge-client.ts`.
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

/**
 * How long a client may take to send a whole request (its head and body) to a forwarder: Node's
 * own default, stated. It bounds only the request's arrival: a streamed answer (SSE) lasts as
 * long as the app keeps it, and an upgraded connection leaves the server's clock. Unbounded (0),
 * a client that sends a head and then stays silent held its socket, and the one to the instance,
 * for good.
 */
export const REQUEST_RECEIVE_MS = 300_000;

/** RFC 9110 §7.6.1: meaningful for one connection only, never forwarded. */
export const HOP_BY_HOP = new Set([
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

/** Headers a `Connection` header cannot make hop-by-hop. */
const END_TO_END = new Set(['host', 'content-length']);

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
  // `Connection` may drop hop-by-hop extensions, never what frames or addresses the request: without
  // its `Host` Node's client would write the instance's own address, which an app echoing Host shows.
  const listed = headers.connection
    ? connectionTokens(headers.connection).filter((name) => !END_TO_END.has(name))
    : null;
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
