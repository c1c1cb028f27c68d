export interface HttpResponse<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as-is, for malformed-body tests. */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Override the client's key; `null` sends none. */
  key?: string | null;
}

/** A tiny fetch wrapper: JSON in and out, `X-Api-Key` by default. */
export class HttpClient {
  constructor(
    readonly baseUrl: string,
    private readonly key: string | null,
    private readonly extraHeaders: Record<string, string> = {},
  ) {}

  /** The same client with another key (and optional fixed headers, e.g. X-Tenant-Id). */
  as(key: string | null, headers: Record<string, string> = {}): HttpClient {
    return new HttpClient(this.baseUrl, key, headers);
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
    const headers: Record<string, string> = { ...this.extraHeaders, ...(options.headers ?? {}) };
    const key = options.key === undefined ? this.key : options.key;
    if (key) headers['x-api-key'] = key;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(this.baseUrl + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed as T, text, headers: res.headers };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }
  post<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('POST', path, { ...options, body });
  }
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PATCH', path, { ...options, body });
  }
  put<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PUT', path, { ...options, body });
  }
  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, options);
  }
}

/** Every line of a revision's `build` or `deploy` log, oldest first, following next_offset to the end. */
export async function revisionLogLines(
  http: HttpClient,
  deploymentId: string,
  revisionId: string,
  type: 'build' | 'deploy',
): Promise<string[]> {
  const lines: string[] = [];
  let offset: string | null = '0';
  while (offset !== null) {
    const res: HttpResponse = await http.get(
      `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=${type}&order=asc&limit=1000&offset=${offset}`,
    );
    if (res.status !== 200) throw new Error(`logs: ${res.status} ${res.text}`);
    lines.push(...res.body.logs.map((l: { message: string }) => l.message));
    offset = res.body.next_offset;
  }
  return lines;
}
