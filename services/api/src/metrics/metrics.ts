import express, { type Request, type RequestHandler, type Router } from 'express';
import { Histogram, Registry } from 'prom-client';
import type { DataSource } from '@slipway/db';
import type { Queues } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { collectProcessMetrics } from '@slipway/logging';
import { QueueJobsCollector, type QueueJobsCollectorOptions } from './queue-jobs.collector.js';
import { RevisionEventsCollector, type RevisionEventsCollectorOptions } from './revision-events.collector.js';
import { TraceRollupsCollector } from './trace-rollups.collector.js';

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/**
 * How long a scrape waits for its collectors. A collection still running after that (Postgres
 * hanging) is not abandoned: it stays the one in flight and the next scrape joins it.
 */
const COLLECT_WAIT_MS = 5_000;
/** The `route` label of a request no route or mount answered. */
export const UNMATCHED_ROUTE = 'unmatched';

export interface MetricsDeps {
  dataSource: DataSource;
  queues: Queues;
  logger: Logger;
  /** Path prefixes every route is also served under (`/api-host`); left out of the route label. */
  prefixes: readonly string[];
  /**
   * Paths where a whole sub-app is mounted (docs UI, Bull Board, /metrics): everything under
   * one is labelled with the mount path, so asset and UI-API paths do not each become a series.
   */
  mounts: readonly string[];
  queueJobs?: QueueJobsCollectorOptions;
  revisionEvents?: RevisionEventsCollectorOptions;
}

export interface Metrics {
  /** This app's own registry: tests build several apps in one process, so never the global one. */
  registry: Registry;
  /** Times every request; mount before anything that can answer. */
  httpMiddleware: RequestHandler;
  /** Answers `GET /` with the Prometheus text format; mount at `/metrics` (no credentials). */
  router: Router;
}

function pathOf(req: Request): string {
  const url = req.originalUrl || req.url;
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * The route pattern (`/v2/listeners/:listener_id`), never the raw URL: ids in labels would make a
 * new series per resource. Read when the response finishes, once routing has set `req.route`.
 */
function routeLabel(req: Request, prefixes: readonly string[], mounts: readonly string[]): string {
  let path = pathOf(req);
  for (const prefix of prefixes) {
    if (prefix && (path === prefix || path.startsWith(prefix + '/'))) {
      path = path.slice(prefix.length) || '/';
      break;
    }
  }
  // Mounts first: a mounted sub-app sets `req.route` to its own inner pattern.
  const mount = mounts.find((m) => path === m || path.startsWith(m + '/'));
  if (mount) return mount;
  const pattern = (req as Request & { route?: { path?: unknown } }).route?.path;
  return typeof pattern === 'string' ? pattern : UNMATCHED_ROUTE;
}

/**
 * Prometheus metrics of one api app (docs/api.md, Operational endpoints): request durations, queue sizes, revision
 * transitions (from `revision_events`, so the workers' transitions count too), each deployment's
 * traces of the last hour per revision, and the Node process defaults, all prefixed `slipway_`.
 */
export function createMetrics(deps: MetricsDeps): Metrics {
  const { dataSource, queues, logger, prefixes, mounts } = deps;
  const registry = new Registry();
  collectProcessMetrics(registry);

  const httpDuration = new Histogram({
    name: 'slipway_http_request_duration_seconds',
    help: 'HTTP request duration, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'],
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const queueJobs = new QueueJobsCollector(registry, queues, logger, deps.queueJobs);
  const revisionEvents = new RevisionEventsCollector(registry, dataSource, logger, deps.revisionEvents);
  const traceRollups = new TraceRollupsCollector(registry, dataSource);

  const httpMiddleware: RequestHandler = (req, res, next) => {
    const end = httpDuration.startTimer();
    res.once('finish', () => {
      end({ method: req.method, route: routeLabel(req, prefixes, mounts), status_code: String(res.statusCode) });
    });
    next();
  };

  let revisionEventsFailing = false;
  let traceRollupsFailing = false;
  let inFlight: Promise<void> | null = null;
  /**
   * One collection at a time: concurrent scrapes share it, so the revision-events cursor is
   * never read twice at once (which would count the same rows twice).
   */
  const collect = (): Promise<void> =>
    (inFlight ??= (async () => {
      const [, events, traces] = await Promise.allSettled([
        queueJobs.collect(),
        revisionEvents.collect(),
        traceRollups.collect(),
      ]);
      // A scrape answers even when Postgres does not: the counters just do not move meanwhile.
      if (events.status === 'rejected' && !revisionEventsFailing) {
        logger.warn({ err: events.reason }, 'could not read revision_events for /metrics');
      }
      revisionEventsFailing = events.status === 'rejected';
      if (traces.status === 'rejected' && !traceRollupsFailing)
        logger.warn({ err: traces.reason }, 'could not read the trace rollups for /metrics');
      traceRollupsFailing = traces.status === 'rejected';
    })().finally(() => {
      inFlight = null;
    }));

  const router = express.Router();
  router.get('/', async (_req, res) => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([collect(), new Promise<void>((resolve) => (timer = setTimeout(resolve, COLLECT_WAIT_MS)))]);
    clearTimeout(timer);
    const body = await registry.metrics();
    res.status(200).setHeader('Content-Type', registry.contentType).send(body);
  });
  router.all('/', (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json({ detail: 'Method Not Allowed' });
  });

  return { registry, httpMiddleware, router };
}
