import type { AgentConfig } from '@slipway/config';
import type { KubernetesObject } from '@kubernetes/client-node';
import type {
  DesiredDeployment as ProtocolDeployment,
  DesiredState as ProtocolState,
  ListenerReport,
  ReportResult,
} from '@slipway/domain';

/** The protocol's wire types (docs/api.md, Listener agent protocol), shared with the api; manifests as the Kubernetes client types them. */
export type DesiredDeployment = ProtocolDeployment<KubernetesObject>;
export type DesiredState = ProtocolState<KubernetesObject>;
export type Report = ListenerReport;

/**
 * The control plane could not be reached, or answered that it cannot serve now (5xx, 429):
 * the agent backs off and leaves the cluster as it is.
 */
export class ControlPlaneUnavailable extends Error {}

/**
 * The agent's side of the listener protocol: the only two calls it makes, with its
 * listener-bound key. The control plane never calls the agent.
 */
export class ControlPlaneClient {
  /** The last desired state received and its ETag: sent back, an unchanged one is a 304 without a body. */
  private last: { etag: string; state: DesiredState } | undefined;

  constructor(private readonly config: AgentConfig) {}

  async desiredState(): Promise<DesiredState> {
    const last = this.last;
    const { status, body, etag } = await this.call<DesiredState>(
      'GET',
      'desired-state',
      undefined,
      last ? { 'if-none-match': last.etag } : {},
    );
    if (status === 304) {
      if (!last) throw new Error('GET desired-state: HTTP 304 to a request that named no ETag');
      return last.state;
    }
    this.last = etag ? { etag, state: body } : undefined;
    return body;
  }

  async report(report: Report): Promise<ReportResult> {
    return (await this.call<ReportResult>('POST', 'reports', report)).body;
  }

  private async call<T>(
    method: string,
    what: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: T; etag: string | null }> {
    const url = `${this.config.apiUrl}/v2/listeners/${encodeURIComponent(this.config.listenerId)}/${what}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          'x-api-key': this.config.apiKey,
          accept: 'application/json',
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body: body ? JSON.stringify(body) : undefined,
        // Never follow: a redirect would re-send the key (and a report) to wherever it points.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.config.requestTimeoutMs),
      });
    } catch (err) {
      throw new ControlPlaneUnavailable(`${method} ${what}: ${(err as Error).cause ?? (err as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    if (res.status === 304) return { status: 304, body: undefined as T, etag: res.headers.get('etag') };
    if (res.status >= 300 && res.status < 400) {
      // Not followed, and not retried sooner: SLIPWAY_API_URL must name the api itself.
      throw new Error(
        `${method} ${what}: HTTP ${res.status} redirect refused (the agent never follows one with its key); ` +
          `set SLIPWAY_API_URL to the api's final URL`,
      );
    }
    if (res.status >= 500 || res.status === 429)
      throw new ControlPlaneUnavailable(`${method} ${what}: HTTP ${res.status}`);
    // A 4xx (a revoked key, a deleted listener) will not fix itself by retrying sooner: the
    // caller logs it and backs off like for an outage, so an operator can repair it.
    if (!res.ok) throw new Error(`${method} ${what}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return { status: res.status, body: JSON.parse(text) as T, etag: res.headers.get('etag') };
  }
}
