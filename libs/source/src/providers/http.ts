import { checkOutboundUrl, guardedFetch, OutboundError, type GuardedResponse, type OutboundPolicy } from '@slipway/net';
import { ProviderError, type CloneProtocol, type RepositoryBranch } from './types.js';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Enough for 10 000 repositories at 100 a page; a host that pages on forever is a bug there. */
export const MAX_PAGES = 100;
/** One page of 100 repositories is far below this; a host answering more is refused. */
export const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
/** No allow-list: https to public addresses only. */
export const STRICT_OUTBOUND: OutboundPolicy = { allowHosts: [] };

export interface HostResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface HostRequest {
  /** The host's display name in errors ("GitHub", "Gitea"). */
  host: string;
  method?: 'GET' | 'POST' | 'PATCH';
  url: string;
  headers: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  timeoutMs: number;
  /** Where the URL may lead (SSRF guard); default https to public addresses only. */
  outbound?: OutboundPolicy;
  /** What a 401 means for this request, appended to the error message. */
  unauthorized?: string;
}

const MAX_DETAIL = 300;

/** The `message` a GitHub/Gitea error body carries, shortened; never the whole body. */
function hostMessage(body: unknown): string | null {
  const message = body && typeof body === 'object' ? (body as { message?: unknown }).message : null;
  if (typeof message !== 'string' || !message.trim()) return null;
  const text = message.trim().replace(/\s+/g, ' ');
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}

/** `GET /user/repos` — path and query only, so errors never carry a host's credentials-bearing URL parts. */
function describe(method: string, url: string): string {
  const u = new URL(url);
  return `${method} ${u.pathname}${u.search}`;
}

/**
 * One JSON request to a repository host with a deadline. Every failure becomes a
 * `ProviderError` that says what the host answered (or that it did not), so the api can pass
 * it on as a 502 without guessing.
 */
export async function requestJson(req: HostRequest): Promise<HostResponse> {
  const method = req.method ?? 'GET';
  const what = describe(method, req.url);
  let res: GuardedResponse;
  try {
    // Never a plain fetch: the URL is user-supplied (api_url, pagination links), so the guard
    // checks every resolved address, pins the connection to it and follows no redirect.
    res = await guardedFetch(req.url, {
      method,
      headers: req.json === undefined ? req.headers : { ...req.headers, 'Content-Type': 'application/json' },
      ...(req.json === undefined ? {} : { body: JSON.stringify(req.json) }),
      timeoutMs: req.timeoutMs,
      maxBodyBytes: MAX_RESPONSE_BYTES,
      policy: req.outbound ?? STRICT_OUTBOUND,
    });
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    if (err.code === 'timeout')
      throw new ProviderError(`${req.host} did not answer ${what} within ${req.timeoutMs / 1000} s.`);
    if (err.code === 'refused')
      throw new ProviderError(`${req.host} at ${new URL(req.url).origin} was not contacted: the URL ${err.message}.`);
    throw new ProviderError(
      `Could not reach ${req.host} at ${new URL(req.url).origin} (${err.causeCode ?? err.message}).`,
    );
  }
  const ok = res.status >= 200 && res.status < 300;
  const text = res.body.toString('utf8');
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    if (ok)
      throw new ProviderError(
        `${req.host} answered ${what} with ${res.status} and a body that is not JSON.`,
        res.status,
      );
  }
  if (!ok) {
    const said = hostMessage(body);
    const status = `${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
    const meaning = res.status === 401 && req.unauthorized ? `: ${req.unauthorized}` : '';
    throw new ProviderError(
      `${req.host} answered ${status} to ${what}${meaning}${said ? ` ("${said}")` : ''}.`,
      res.status,
    );
  }
  return { status: res.status, headers: res.headers, body };
}

/** The `rel="next"` target of an RFC 8288 `Link` header, or null. */
export function nextLink(link: string | null): string | null {
  if (!link) return null;
  for (const part of link.split(',')) {
    const match = /^\s*<([^>]+)>(.*)$/.exec(part);
    const rel = match && /;\s*rel\s*=\s*"?([^";]*)"?/i.exec(match[2]!);
    if (rel && rel[1]!.trim().split(/\s+/).includes('next')) return match[1]!;
  }
  return null;
}

/**
 * A pagination link is followed only on the API's own origin: the request carries the
 * integration's token, which must never be sent to wherever a response points.
 */
export function sameOrigin(host: string, base: string, next: string): string {
  const target = new URL(next, base);
  if (target.origin !== new URL(base).origin) {
    throw new ProviderError(`${host} sent a pagination link to another origin (${target.origin}); not followed.`);
  }
  return target.toString();
}

/** Host repository JSON (GitHub and Gitea share these fields) → a RepositoryEntry. */
export function entryFrom(host: string, raw: unknown) {
  const r = raw as {
    id?: unknown;
    name?: unknown;
    owner?: { login?: unknown; username?: unknown } | null;
    clone_url?: unknown;
    html_url?: unknown;
    default_branch?: unknown;
  };
  const url = typeof r?.clone_url === 'string' && r.clone_url ? r.clone_url : r?.html_url;
  if (!r || typeof r.id !== 'number' || typeof r.name !== 'string' || typeof url !== 'string') {
    throw new ProviderError(`${host} answered with a repository that lacks id, name or clone_url.`);
  }
  const owner = r.owner?.login ?? r.owner?.username;
  return {
    id: r.id,
    name: r.name,
    owner: typeof owner === 'string' ? owner : '',
    url,
    // An empty repository has no default branch yet on some hosts.
    default_branch: typeof r.default_branch === 'string' && r.default_branch ? r.default_branch : 'main',
  };
}

export const trimSlashes = (url: string) => url.replace(/\/+$/, '');

/** `owner/name` of a hosted repository's clone URL (its last two path segments, `.git` dropped), URL-encoded for an API path. */
export function repoPathOf(host: string, url: string): string {
  let parts: string[];
  try {
    parts = new URL(url).pathname
      .replace(/\.git$/i, '')
      .split('/')
      .filter(Boolean);
  } catch {
    parts = [];
  }
  if (parts.length < 2)
    throw new ProviderError(`${host} repository URL ${url} does not name an owner and a repository.`);
  return parts.slice(-2).map(encodeURIComponent).join('/');
}

/** Host branch JSON (`{name, commit: {sha}}` on GitHub, `{name, commit: {id}}` on Gitea) → a RepositoryBranch. */
export function branchFrom(host: string, raw: unknown): RepositoryBranch {
  const r = raw as { name?: unknown; commit?: { sha?: unknown; id?: unknown } | null };
  const sha = r?.commit?.sha ?? r?.commit?.id;
  if (!r || typeof r.name !== 'string' || typeof sha !== 'string') {
    throw new ProviderError(`${host} answered with a branch that lacks name or commit.`);
  }
  return { name: r.name, commit_sha: sha };
}

/**
 * A github/gitea clone URL must name the integration's own host: the `api_url`'s host, or for
 * an `api.` host (api.github.com) its parent (github.com). Then the outbound policy decides the
 * scheme and the addresses, as for API requests: a custom `api_url` cannot point clones at a
 * local path, another scheme or an internal host.
 */
export async function checkHostedCloneUrl(
  host: string,
  apiUrl: string,
  url: string,
  policy: OutboundPolicy | undefined,
): Promise<CloneProtocol> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new ProviderError(`The repository URL is not an absolute URL; ${host} repositories are cloned over https.`);
  }
  const apiHost = new URL(apiUrl).hostname.toLowerCase();
  const hosts = new Set([apiHost, apiHost.replace(/^api\./, '')]);
  if (!hosts.has(target.hostname.toLowerCase())) {
    throw new ProviderError(
      `Clones of this ${host} integration must come from ${[...hosts].join(' or ')}, not ${target.hostname || target.protocol}.`,
    );
  }
  try {
    await checkOutboundUrl(url, policy ?? STRICT_OUTBOUND);
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    throw new ProviderError(`The repository URL ${err.code === 'refused' ? '' : 'cannot be checked: '}${err.message}.`);
  }
  return target.protocol === 'http:' ? 'http' : 'https';
}
