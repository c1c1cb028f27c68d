import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressRefusal, bareHost, hostAllowed, type OutboundPolicy } from './address-policy.js';

export type OutboundErrorCode =
  /** The URL or an address it resolves to breaks the policy; retrying cannot help. */
  | 'refused'
  /** DNS failed, the connection failed or broke off. */
  | 'unreachable'
  /** No complete answer within the timeout. */
  | 'timeout'
  /** The answer's body passed `maxBodyBytes`. */
  | 'too_large';

/** Why an outbound request was not made or not completed. `message` never holds credentials. */
export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
    /** The bare cause where there is one (`ECONNREFUSED`, `ENOTFOUND`), for callers that phrase their own message. */
    readonly causeCode: string | null = null,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface GuardedFetchOptions {
  policy: OutboundPolicy;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** For the whole exchange: DNS, connect, request, and reading the body. Default 10 s. */
  timeoutMs?: number;
  /** Largest response body read; a larger one fails with `too_large`. Default 10 MiB. */
  maxBodyBytes?: number;
  signal?: AbortSignal;
}

export interface GuardedResponse {
  status: number;
  statusText: string;
  headers: Headers;
  body: Buffer;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BODY = 10 * 1024 * 1024;

/**
 * Checks a user-supplied URL against `policy` without connecting: the scheme (`https`, or
 * `http` to an allow-listed host), no credentials in it, and, when `resolve` is set, every
 * address its host resolves to. Returns the parsed URL and the checked addresses (none when
 * not resolved). Throws OutboundError(`refused` or `unreachable`).
 *
 * Meant for validating input at the edge (a 422 naming the field); `guardedFetch` checks
 * again at every request, because DNS answers change.
 */
export async function checkOutboundUrl(
  raw: string,
  policy: OutboundPolicy,
  { resolve = true }: { resolve?: boolean } = {},
): Promise<{ url: URL; addresses: Array<{ address: string; family: 4 | 6 }> }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundError('refused', 'is not an absolute URL');
  }
  const host = bareHost(url.hostname);
  const allowed = hostAllowed(host, policy);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed)) {
    throw new OutboundError(
      'refused',
      url.protocol === 'http:'
        ? `must use https (plain http only to allow-listed hosts; ${host} is not one)`
        : `must use https, not ${url.protocol}`,
    );
  }
  if (url.username || url.password) throw new OutboundError('refused', 'must not carry credentials in the URL');
  if (!host) throw new OutboundError('refused', 'has no host');
  if (isIP(host)) return { url, addresses: [checked(host, host, policy, allowed)] };
  if (!resolve) return { url, addresses: [] };
  let answers: Array<{ address: string; family: number }>;
  try {
    answers = await lookup(host, { all: true, verbatim: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'DNS error';
    throw new OutboundError('unreachable', `host ${host} does not resolve (${code})`, code);
  }
  if (!answers.length) throw new OutboundError('unreachable', `host ${host} does not resolve`);
  // Every answer, not only the first: a name that also resolves to an internal address is refused
  // outright, so a resolver's ordering cannot decide where the request goes.
  return { url, addresses: answers.map((a) => checked(a.address, host, policy, allowed)) };
}

/** The address, or OutboundError(refused) naming why it may not be reached. */
function checked(
  address: string,
  host: string,
  policy: OutboundPolicy,
  hostIsAllowed: boolean,
): { address: string; family: 4 | 6 } {
  const refusal = hostIsAllowed ? null : addressRefusal(address, policy);
  if (refusal) {
    const via = address === host ? '' : ` (${host} resolves to ${address})`;
    throw new OutboundError(
      'refused',
      `must not point at ${refusal}${via}; allow-list the host in SLIPWAY_OUTBOUND_ALLOW_HOSTS to permit it`,
    );
  }
  return { address, family: isIP(address) === 6 ? 6 : 4 };
}

/**
 * One HTTP request to a user-supplied URL, safe against server-side request forgery:
 * - the URL and every address its host resolves to are checked (`checkOutboundUrl`);
 * - the connection goes to the address that was checked (the socket's DNS lookup is pinned
 *   to it), so a second, different DNS answer cannot redirect it (no re-resolution race);
 *   TLS still verifies the certificate against the URL's host name;
 * - redirects are never followed: a 3xx is returned like any other answer;
 * - the body is read up to `maxBodyBytes` and the whole exchange ends at `timeoutMs`.
 * Resolves with any HTTP status; rejects only with OutboundError (or the caller's abort).
 */
export async function guardedFetch(raw: string, options: GuardedFetchOptions): Promise<GuardedResponse> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const work = exchange(raw, options, signal);
  // DNS lookups cannot be aborted; the deadline still holds for the caller.
  const deadline = new Promise<never>((_, reject) => {
    const fail = () =>
      reject(
        options.signal?.aborted
          ? options.signal.reason
          : new OutboundError(
              'timeout',
              `${describe(raw)} did not answer within ${Math.round(timeoutMs / 100) / 10} s`,
            ),
      );
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
  work.catch(() => undefined);
  return Promise.race([work, deadline]);
}

async function exchange(raw: string, options: GuardedFetchOptions, signal: AbortSignal): Promise<GuardedResponse> {
  const { url, addresses } = await checkOutboundUrl(raw, options.policy);
  const target = addresses[0]!;
  // Pinned: whatever name the socket looks up, it gets the checked address.
  const pinned: LookupFunction = (_hostname, opts, callback) => {
    if ((opts as { all?: boolean }).all)
      (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<GuardedResponse>((resolve, reject) => {
    const req = send(
      url,
      { method: options.method ?? 'GET', headers: options.headers, lookup: pinned, signal, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBody) {
            // Settled first: destroying the stream makes it report a broken-off answer too.
            reject(new OutboundError('too_large', `${describe(raw)} answered with a body over ${maxBody} bytes`));
            res.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? '',
            headers: toHeaders(res.headers),
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', (err) =>
          reject(new OutboundError('unreachable', `${describe(raw)} broke off its answer (${err.message})`)),
        );
        res.on('aborted', () => reject(new OutboundError('unreachable', `${describe(raw)} broke off its answer`)));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.name === 'AbortError') return; // the deadline (or the caller) already answered
      reject(
        new OutboundError(
          'unreachable',
          `could not reach ${url.origin} (${err.code ?? err.message})`,
          err.code ?? err.message,
        ),
      );
    });
    req.end(options.body);
  });
}

function toHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  return headers;
}

/** `GET https://host/path` without query or credentials, for messages. */
function describe(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.origin}${u.pathname}`;
  } catch {
    return 'the URL';
  }
}
