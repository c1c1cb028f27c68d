import { createServer, type Server } from 'node:http';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadConfigOrExit, platformCredentials, type Config } from '@slipway/config';
import { createDataSource, EVENTS_CHANNEL, PgNotifications, type DataSource } from '@slipway/db';
import { createLogger, installShutdown, type Logger } from '@slipway/logging';
import { secretsCodec, type SecretsCodec } from '@slipway/crypto';
import {
  closeQueues,
  createQueues,
  createWebhookWorker,
  createWorker,
  JOB_CATALOG,
  OUTBOX_CHANNEL,
  OutboxRelay,
  producerConnection,
  QUEUES,
  WebhookFanout,
  WorkerMetrics,
  workerConnection,
  type Queues,
} from '@slipway/jobs';
import { Reconciler } from './reconciler.js';
import { Retention } from './retention.js';
import { RevisionFlow } from './revision-flow.js';

/** Everything a worker process's handlers need; built once per process. */
export interface WorkerProcessContext {
  config: Readonly<Config>;
  log: Logger;
  dataSource: DataSource;
  /** Producer-side queues (job lookups by the reconciler). */
  queues: Queues;
  /** A waiting connection for Worker instances (BullMQ requires `maxRetriesPerRequest: null`). */
  workerRedis: Redis;
  flow: RevisionFlow;
  /** This process's `/metrics` (the service may register counters of its own). */
  metrics: WorkerMetrics;
  /** The process's one secrets codec. */
  secrets: SecretsCodec;
}

export interface WorkerProcessSpec {
  name: 'builder' | 'deployer';
  /** The process's own workers; the maintenance worker and the outbox relay are added for every process. */
  workers: (ctx: WorkerProcessContext) => Worker[];
  /**
   * Runs once the connections are up, before any worker takes a job (e.g. the deployer's
   * runtime supervisor). What it returns is stopped at shutdown, right after the workers closed.
   */
  onStart?: (ctx: WorkerProcessContext) => Promise<{ name: string; stop: () => Promise<unknown> } | void>;
}

/**
 * Runs a worker service: config, logging, Postgres, Redis connections, the service's own
 * workers, a `maintenance` worker running the reconciler (any live worker process can
 * reconcile, so one crashed process never stops recovery), the `webhooks` worker and the
 * webhook fan-out (likewise shared by every worker process), an outbox relay (workers write
 * outbox rows too), an optional health port, and one ordered shutdown.
 */
export async function runWorkerProcess(spec: WorkerProcessSpec): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger({ name: spec.name, level: config.logLevel, secrets: platformCredentials(config) });
  const dataSource = createDataSource({ url: config.databaseUrl, applicationName: `slipway-${spec.name}` });
  // Workers wait out a database that is not up yet instead of crash-looping.
  for (let attempt = 1; ; attempt++) {
    try {
      await dataSource.initialize();
      break;
    } catch (err) {
      if (attempt >= 30) throw err;
      log.warn({ err, attempt }, 'database not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
  const producerRedis = producerConnection(config.redisUrl, log);
  const workerRedis = workerConnection(config.redisUrl, log);
  const queues = createQueues(producerRedis, config.queuePrefix, log);
  const flow = new RevisionFlow(config.pipeline);
  const metrics = new WorkerMetrics(spec.name);
  const ctx: WorkerProcessContext = { config, log, dataSource, queues, workerRedis, flow, metrics, secrets: secretsCodec(config) };

  const started = (await spec.onStart?.(ctx)) ?? null;
  const reconciler = new Reconciler(dataSource, queues, flow, config.pipeline, log);
  const retention = new Retention(dataSource, config, log);
  const workers = [
    ...spec.workers(ctx),
    createWorker({
      queue: QUEUES.maintenance,
      handlers: {
        'reconcile.tick': async () => void (await reconciler.run()),
        'retention.prune': async () => void (await retention.run()),
      },
      connection: workerRedis,
      prefix: config.queuePrefix,
      concurrency: 1,
      log,
    }),
    createWebhookWorker({ config, dataSource, connection: workerRedis, secrets: ctx.secrets, log }),
  ];
  for (const worker of workers) metrics.observe(worker);
  await scheduleMaintenance(queues, config, log);

  // The process's one LISTEN connection: the relay's wake-ups and the fan-out's.
  const notifications = new PgNotifications(config.databaseUrl, [OUTBOX_CHANNEL, EVENTS_CHANNEL], log);
  const relay = new OutboxRelay(dataSource, queues, log, flow, { notifications });
  relay.start();
  const fanout = new WebhookFanout(dataSource, log, config.webhooks.fanoutPollMs, notifications);
  fanout.start();
  const health = config.workerHealthPort ? startHealthServer(config.workerHealthPort, dataSource, metrics, log) : null;
  log.info({ workers: workers.map((w) => w.name) }, `${spec.name} started`);

  installShutdown(
    log,
    [
      { name: 'workers', run: () => Promise.all(workers.map((w) => w.close())) },
      ...(started ? [{ name: started.name, run: started.stop }] : []),
      { name: 'webhook fan-out', run: () => fanout.stop() },
      { name: 'outbox relay', run: () => relay.stop().then(() => notifications.close()) },
      { name: 'health', run: () => health && new Promise((r) => health.close(r)) },
      { name: 'queues', run: () => closeQueues(queues) },
      { name: 'redis', run: () => Promise.all([producerRedis.quit(), workerRedis.quit()]) },
      { name: 'postgres', run: () => dataSource.destroy() },
    ],
    config.shutdownTimeoutMs,
  );
}

/**
 * One repeatable reconcile job and one retention job for the whole system: every worker process
 * upserts the same schedulers (idempotent), so the schedules survive any single process.
 */
async function scheduleMaintenance(queues: Queues, config: Readonly<Config>, log: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await queues.maintenance.upsertJobScheduler(
        'reconcile',
        { every: config.pipeline.reconcileIntervalMs },
        { name: 'reconcile.tick', data: {}, opts: JOB_CATALOG['reconcile.tick'].options },
      );
      await queues.maintenance.upsertJobScheduler(
        'retention',
        { every: config.retention.intervalMs },
        { name: 'retention.prune', data: {}, opts: JOB_CATALOG['retention.prune'].options },
      );
      return;
    } catch (err) {
      if (attempt >= 30) throw err;
      log.warn({ err }, 'could not schedule the reconciler yet (Redis?); retrying');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
}

/**
 * `/healthz` (process up), `/readyz` (Postgres answers) and `/metrics` for orchestrators and
 * Prometheus: never rate limited, and only ok / not ok (what is down goes to the log).
 */
function startHealthServer(port: number, dataSource: DataSource, metrics: WorkerMetrics, log: Logger): Server {
  let wasReady = true;
  const server = createServer(async (req, res) => {
    if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
      return;
    }
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (req.url === '/readyz') {
      const ok = await dataSource.query('SELECT 1').then(
        () => true,
        () => false,
      );
      if (ok !== wasReady) log[ok ? 'info' : 'warn'](ok ? 'health port: ready again' : 'health port: not ready, Postgres unreachable');
      wasReady = ok;
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(ok ? '{"status":"ok"}' : '{"status":"unavailable"}');
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
  });
  server.listen(port, () => log.info({ port }, 'health port listening'));
  return server;
}
