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
 * outcome, the routes it holds, and the Node process defaults. Counting is one increment of a
 * pre-bound child per request: no label lookup on the serving path.
 */
export class EdgeMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'listener' | 'outcome'>;
  private readonly bound = new Map<string, Counter.Internal>();

  constructor(routes: () => number) {
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
