import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadConfigOrExit, platformCredentials, type Config } from '@slipway/config';
import { secretsCodec, type SecretsCodec } from '@slipway/crypto';
import { createDataSource, initializeWhenReachable, PgNotifications, type DataSource } from '@slipway/db';
import { closeQueues, createQueues, producerConnection, workerConnection, type Queues } from '@slipway/jobs';
import { createLogger, installProcessGuards, installShutdown, type Logger } from '@slipway/logging';
import { RevisionFlow } from '@slipway/pipeline';
import { WorkerMetrics } from './worker-metrics.js';

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

/** A role's context: the process's, plus its one `LISTEN` connection. */
export interface WorkerRoleContext extends WorkerProcessContext {
  /** Listens on the channels the process's roles declare. */
  notifications: PgNotifications;
}

/** Something started that shutdown stops, named in the shutdown steps. */
export interface Running {
  name: string;
  stop: () => Promise<unknown>;
}

/**
 * Work a worker process hosts beside its service's own workers (roles.ts: maintenance, webhook
 * delivery, the outbox relay, the health port). Each service's main.ts lists the roles it hosts.
 */
export interface WorkerRole {
  /** Named in the start log line. */
  name: string;
  /** The `LISTEN` channels it is woken on. */
  channels?: readonly string[];
  /** Its queue workers, created and observed together with the service's own. */
  workers?: (ctx: WorkerProcessContext) => Worker[];
  /** Starts the rest (schedules, loops, a port) once every worker runs; what it returns is stopped at shutdown. */
  start?: (ctx: WorkerRoleContext) => Promise<Running | void>;
}

export interface WorkerProcessSpec {
  name: 'builder' | 'deployer';
  /** The process's own workers. */
  workers: (ctx: WorkerProcessContext) => Worker[];
  /** What else the process hosts, started in this order and stopped in this order. */
  roles: readonly WorkerRole[];
  /**
   * Runs once the connections are up, before any worker takes a job (e.g. the deployer's
   * runtime supervisor). What it returns is stopped at shutdown, right after the workers closed.
   */
  onStart?: (ctx: WorkerProcessContext) => Promise<Running | void>;
}

/**
 * Runs a worker service: config, logging, Postgres, Redis connections, the service's own
 * workers, the roles its spec lists (workers, loops and a port of their own, woken through the
 * process's one `LISTEN` connection), and one ordered shutdown.
 */
export async function runWorkerProcess(spec: WorkerProcessSpec): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger({ name: spec.name, level: config.logLevel, secrets: platformCredentials(config) });
  installProcessGuards(log);
  const dataSource = createDataSource({ url: config.databaseUrl, applicationName: `slipway-${spec.name}` });
  // Workers wait out a database that is not up yet instead of crash-looping.
  await initializeWhenReachable(dataSource, log);
  const producerRedis = producerConnection(config.redisUrl, log);
  const workerRedis = workerConnection(config.redisUrl, log);
  const queues = createQueues(producerRedis, config.queuePrefix, log);
  const flow = new RevisionFlow(config.pipeline);
  const metrics = new WorkerMetrics(spec.name);
  const ctx: WorkerProcessContext = {
    config,
    log,
    dataSource,
    queues,
    workerRedis,
    flow,
    metrics,
    secrets: secretsCodec(config),
  };

  const started = (await spec.onStart?.(ctx)) ?? null;
  const workers = [...spec.workers(ctx), ...spec.roles.flatMap((role) => role.workers?.(ctx) ?? [])];
  for (const worker of workers) metrics.observe(worker);

  const channels = [...new Set(spec.roles.flatMap((role) => role.channels ?? []))];
  const notifications = new PgNotifications(config.databaseUrl, channels, log);
  const running: Running[] = [];
  for (const role of spec.roles) {
    const r = await role.start?.({ ...ctx, notifications });
    if (r) running.push(r);
  }
  log.info({ workers: workers.map((w) => w.name), roles: spec.roles.map((r) => r.name) }, `${spec.name} started`);

  installShutdown(
    log,
    [
      { name: 'workers', run: () => Promise.all(workers.map((w) => w.close())) },
      ...[started, ...running].filter((r) => r !== null).map((r) => ({ name: r.name, run: r.stop })),
      { name: 'notifications', run: () => notifications.close() },
      { name: 'queues', run: () => closeQueues(queues) },
      { name: 'redis', run: () => Promise.all([producerRedis.quit(), workerRedis.quit()]) },
      { name: 'postgres', run: () => dataSource.destroy() },
    ],
    config.shutdownTimeoutMs,
  );
}
