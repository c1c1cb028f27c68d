/**
 * The one module that talks to the API: the session (key kept in sessionStorage only, never in a
 * URL or localStorage), authenticated requests, errors turned into words, and feature detection
 * through the service's own OpenAPI document.
 */
import { readEventStream, type StreamMessage } from './sse';

const KEY_ITEM = 'slipway.console.apiKey';
const TENANT_ITEM = 'slipway.console.tenantId';

export interface Session {
  key: string;
  /** The workspace an organization-scoped key acts on (X-Tenant-Id); null for workspace keys. */
  tenantId: string | null;
}

export const sessionStore = {
  load(): Session | null {
    const key = sessionStorage.getItem(KEY_ITEM);
    return key ? { key, tenantId: sessionStorage.getItem(TENANT_ITEM) || null } : null;
  },
  save(session: Session): void {
    sessionStorage.setItem(KEY_ITEM, session.key);
    if (session.tenantId) sessionStorage.setItem(TENANT_ITEM, session.tenantId);
    else sessionStorage.removeItem(TENANT_ITEM);
  },
  clear(): void {
    sessionStorage.removeItem(KEY_ITEM);
    sessionStorage.removeItem(TENANT_ITEM);
  },
};

/** An API refusal, its message in words: the `detail` text of the body (docs/api.md, Errors). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 422's problems, each where (`loc` without `body`/`query`, joined by dots) and what. */
    readonly issues: FieldIssue[] = [],
  ) {
    super(message);
  }

  /** The org-scoped key without a workspace (403): the sign-in form then asks for one. */
  get needsWorkspace(): boolean {
    return this.status === 403 && /X-Tenant-Id/i.test(this.message);
  }
}

export interface FieldIssue {
  /** `source_config.repo_url`, `secrets.0.name`: the field, as the form names its inputs. */
  field: string;
  message: string;
}

/** The field problems of a 422 body (`detail: [{loc, msg}]`). */
export function fieldIssues(body: unknown): FieldIssue[] {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (!Array.isArray(detail)) return [];
  return detail.map((item: { loc?: unknown[]; msg?: string }) => ({
    field: Array.isArray(item.loc)
      ? item.loc.filter((p, i) => !(i === 0 && ['body', 'query', 'path'].includes(String(p)))).join('.')
      : '',
    message: item.msg ?? 'invalid',
  }));
}

/** The detail of an error body in words; validation problems as "where: what", one per item. */
export function detailText(status: number, body: unknown): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string' && detail) return detail;
  if (Array.isArray(detail) && detail.length) {
    return detail
      .map((item: { loc?: unknown[]; msg?: string }) => {
        const where = Array.isArray(item.loc) ? item.loc.filter((p) => p !== 'body' && p !== 'query').join('.') : '';
        return where ? `${where}: ${item.msg ?? 'invalid'}` : (item.msg ?? 'invalid');
      })
      .join('; ');
  }
  return `The server answered ${status} without saying why.`;
}

/** Where the API lives: the path before `/console` (empty, or `/api-host` behind a proxy prefix). */
export function apiBase(): string {
  const at = location.pathname.indexOf('/console');
  return at > 0 ? location.pathname.slice(0, at) : '';
}

type Query = Record<string, string | number | boolean | null | undefined | string[]>;

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) {
      if (value.length) params.set(name, value.join(','));
    } else params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export interface Capabilities {
  /** `GET /v2/events/stream` (server-sent events of the workspace). */
  eventStream: boolean;
  /** `follow=true` on revision logs (server-sent log lines). */
  logFollow: boolean;
  /** `GET /v2/deployments/{id}/revision-history`. */
  revisionHistory: boolean;
}

export class Api {
  private capabilities: Promise<Capabilities> | null = null;

  constructor(
    readonly session: Session,
    readonly base = apiBase(),
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { 'X-Api-Key': this.session.key, ...extra };
    if (this.session.tenantId) headers['X-Tenant-Id'] = this.session.tenantId;
    return headers;
  }

  async request<T>(
    method: string,
    path: string,
    options: { query?: Query; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.base + withQuery(path, options.query), {
        method,
        headers: this.headers(options.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new ApiError(0, 'The API could not be reached. Check the connection and try again.');
    }
    const text = await res.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = null;
    }
    if (!res.ok) throw new ApiError(res.status, detailText(res.status, body), fieldIssues(body));
    return body as T;
  }

  get<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', path, { query, signal });
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('POST', path, { body: body ?? {} });
  }

  delete(path: string): Promise<unknown> {
    return this.request('DELETE', path);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body });
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, { body });
  }

  /**
   * Opens a server-sent event stream with the key in a header (EventSource cannot send headers,
   * so this reads a streamed fetch). Resolves when the stream ends; rejects on a refusal or a
   * dropped connection; `signal` closes it.
   */
  async stream(
    path: string,
    options: {
      query?: Query;
      lastEventId?: string | null;
      signal: AbortSignal;
      onOpen?: () => void;
      onMessage: (m: StreamMessage) => void;
    },
  ): Promise<void> {
    const extra: Record<string, string> = { Accept: 'text/event-stream' };
    if (options.lastEventId) extra['Last-Event-ID'] = options.lastEventId;
    const res = await fetch(this.base + withQuery(path, options.query), {
      headers: this.headers(extra),
      signal: options.signal,
      credentials: 'omit',
      cache: 'no-store',
    });
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      throw new ApiError(res.status, detailText(res.status, body));
    }
    if (!res.body || !/text\/event-stream/.test(res.headers.get('content-type') ?? ''))
      throw new ApiError(res.status, 'The server did not answer with an event stream.');
    options.onOpen?.();
    await readEventStream(res.body, options.onMessage);
  }

  /**
   * What this server offers, read once from its OpenAPI document (no key needed), so the console
   * never probes a route that is not there: without the event stream it polls instead.
   */
  features(): Promise<Capabilities> {
    this.capabilities ??= fetch(`${this.base}/openapi.json`, { credentials: 'omit' })
      .then((res) => (res.ok ? res.json() : { paths: {} }))
      .then((doc: { paths?: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>> }) => {
        const paths = doc.paths ?? {};
        const logs = paths['/v2/deployments/{deployment_id}/revisions/{revision_id}/logs']?.get;
        return {
          eventStream: !!paths['/v2/events/stream']?.get,
          logFollow: !!logs?.parameters?.some((p) => p.in === 'query' && p.name === 'follow'),
          revisionHistory: !!paths['/v2/deployments/{deployment_id}/revision-history']?.get,
        };
      })
      .catch(() => ({ eventStream: false, logFollow: false, revisionHistory: false }));
    return this.capabilities;
  }
}
