import type { CertificateSummary } from '@slipway/db';
import { collectProcessMetrics } from '@slipway/logging';
import { Counter, Gauge, Registry } from 'prom-client';

/** What became of a request at the edge. */
export type EdgeOutcome =
  | 'forwarded'
  | 'redirected'
  | 'acme_challenge'
  | 'no_host'
  | 'unknown_host'
  | 'refused'
  | 'upstream_error';

const OUTCOMES: readonly EdgeOutcome[] = [
  'forwarded',
  'redirected',
  'acme_challenge',
  'no_host',
  'unknown_host',
  'refused',
  'upstream_error',
];

/**
 * The edge's Prometheus metrics, served on its health port: requests (and upgrades) by listener and
 * outcome, the routes it holds, each ACME certificate's expiry and failed attempts (read from
 * Postgres at each scrape: every replica shows them all), and the Node process defaults. Counting
 * is one increment of a pre-bound child per request: no label lookup on the serving path.
 */
export class EdgeMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'listener' | 'outcome'>;
  private readonly bound = new Map<string, Counter.Internal>();

  constructor(routes: () => number, certificates?: () => Promise<CertificateSummary[]>) {
    this.registry.setDefaultLabels({ service: 'edge' });
    collectProcessMetrics(this.registry);
    this.requests = new Counter({
      name: 'slipway_edge_requests_total',
      help:
        'Requests and upgrades the edge answered, by listener (http, https) and outcome (forwarded, redirected, ' +
        'acme_challenge, no_host, unknown_host, refused); upstream_error counts the forwarded ones the ' +
        'deployment did not answer.',
      labelNames: ['listener', 'outcome'],
      registers: [this.registry],
    });
    new Gauge({
      name: 'slipway_edge_routes',
      help: 'Deployments the edge routes to now.',
      registers: [this.registry],
      collect() {
        this.set(routes());
      },
    });
    if (certificates) certificateGauges(this.registry, certificates);
  }

  /** The counter of one listener's outcomes, bound once (and so shown at 0 before the first request). */
  listener(name: 'http' | 'https'): (outcome: EdgeOutcome) => void {
    for (const outcome of OUTCOMES) {
      const child = this.requests.labels(name, outcome);
      // A series exists from its first increment: 0 makes it visible before the first request.
      child.inc(0);
      this.bound.set(`${name}:${outcome}`, child);
    }
    return (outcome) => this.bound.get(`${name}:${outcome}`)!.inc();
  }
}

/**
 * One series per host the edge wants a certificate for: when its certificate expires (none before
 * the first is obtained) and how many attempts failed since the last success. An alert on either
 * (`… - time() < 14 * 86400`, `… > 0` for an hour) catches a renewal that keeps failing while the
 * old certificate is still served, long before clients see it expire.
 */
function certificateGauges(registry: Registry, read: () => Promise<CertificateSummary[]>): void {
  // One read per scrape for both gauges: a scrape collects every metric at once, so the second
  // gauge joins the read the first started, still in flight; once it settles the next scrape reads
  // afresh (nothing is kept, so nothing stale is served).
  let inFlight: Promise<CertificateSummary[]> | null = null;
  const rowsNow = () =>
    (inFlight ??= read()
      // Postgres away: no series rather than a failed scrape (the readiness probe says why).
      .catch(() => [])
      .finally(() => {
        inFlight = null;
      }));
  const filled = (value: (c: CertificateSummary) => number | null) =>
    async function (this: Gauge<'host'>) {
      const rows = await rowsNow();
      this.reset();
      for (const c of rows) {
        const v = value(c);
        if (v !== null) this.set({ host: c.host }, v);
      }
    };
  new Gauge({
    name: 'slipway_edge_certificate_expiry_timestamp_seconds',
    help: "When the host's stored certificate expires (Unix time), by host (a wildcard's host is `*.<domain>`).",
    labelNames: ['host'],
    registers: [registry],
    collect: filled((c) => (c.notAfter ? Math.floor(c.notAfter.getTime() / 1000) : null)),
  });
  new Gauge({
    name: 'slipway_edge_certificate_failures',
    help: "Failed attempts to obtain or renew the host's certificate since its last success, by host.",
    labelNames: ['host'],
    registers: [registry],
    collect: filled((c) => c.failures),
  });
}
