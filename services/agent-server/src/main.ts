// The host's storage and lifecycle, once server.ts has loaded the project's graphs: schema set-up
// (under one advisory lock), checkpoints and store, the row-level ops, the run queue and the Redis
// streams, then by role the published server (with or without worker loops, crons and TTL sweeps)
// or a queue worker (queue-worker.ts), and a draining shutdown on SIGTERM.
import { randomUUID } from 'node:crypto';
import type { Hono } from 'hono';
import type { Ops } from '@langchain/langgraph-api/storage';
import { Redis } from 'ioredis';
import { codeId } from './code-id.js';
import { mountCronRoutes } from './cron-routes.js';
import { PgCrons } from './crons.js';
import { registerCustomAuth, type AuthConfig } from './custom-auth.js';
import { createPool, databaseAddress, firstConnection, type Db } from './db.js';
import { HOST_APP_SPEC, prepareHostApp } from './http-app.js';
import { migrateLegacyRecords } from './legacy.js';
import { graphDescriptions, mountMcpRoute } from './mcp.js';
import { createOps } from './ops.js';
import { createPersistence, wirePersistence } from './persistence.js';
import { RunQueue } from './queue.js';
import { RunStats } from './run-stats.js';
import type { PgRuns } from './runs.js';
import { migrate } from './schema.js';
import { RunStreams } from './streams.js';
import type { PgThreads } from './threads.js';
import { startSweeps, ttlConfig, type TtlConfig } from './ttl.js';
import { apiModule, logger } from './upstream.js';
import { startQueueWorker, type QueueWorkerOptions } from './queue-worker.js';

/**
 * What this process does (SLIPWAY_AGENT_SERVER_ROLE, set by the runtime): `all` (no queue workers:
 * it serves the API and runs graphs), `api` (serves, runs no graph), `queue` (runs graphs, serves
 * only its health probe). Crons and TTL sweeps are scheduled by the processes that serve.
 */
export type HostRole = 'all' | 'api' | 'queue';
const ROLES: readonly HostRole[] = ['all', 'api', 'queue'];

/** Worker loops of a process that runs graphs, as the official server's N_JOBS_PER_WORKER. */
const DEFAULT_JOBS_PER_WORKER = 10;

/** Instances of a deployment start together: their schema set-ups take turns under this lock. */
const SCHEMA_LOCK = 0x534c4950; // "SLIP"
/** How often each instance's scheduler looks for due crons. */
const CRON_POLL_MS = 1_000;

export { ttlConfig };

export interface HostSettings {
  /** The instance's port (PORT, set by the runtime; 8000 as the published server's default). */
  port: number;
  role: HostRole;
  /** Runs a process that runs graphs executes at once (N_JOBS_PER_WORKER). */
  jobsPerWorker: number;
  databaseUri: string;
  redisUri: string;
  redisPrefix: string;
  /** How long a run's claim holds without a heartbeat. */
  leaseMs: number;
  /** On SIGTERM, how long runs in flight may take to finish before they are requeued. */
  drainMs: number;
  /** Overrides both TTL sweep intervals of langgraph.json (tests sweep every second). */
  ttlSweepMs?: number;
}

/** Reads the host's settings from its environment; names what is missing. */
export function settingsFromEnv(env: NodeJS.ProcessEnv): HostSettings {
  const missing = ['DATABASE_URI', 'REDIS_URI', 'REDIS_PREFIX'].filter((name) => !env[name]);
  if (missing.length)
    throw new Error(
      `${missing.join(', ')} not set: the agent server keeps its threads in the deployment database and streams runs through its Redis.`,
    );
  const ms = (name: string, fallback: number) => {
    const value = Number(env[name] ?? fallback);
    if (!Number.isFinite(value) || value < 100)
      throw new Error(`${name} must be a number of milliseconds of at least 100`);
    return value;
  };
  const role = (env.SLIPWAY_AGENT_SERVER_ROLE || 'all') as HostRole;
  if (!ROLES.includes(role)) throw new Error(`SLIPWAY_AGENT_SERVER_ROLE must be one of ${ROLES.join(', ')}`);
  const port = Number(env.PORT ?? 8000);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error('PORT must be a port number');
  const jobsPerWorker = Number(env.N_JOBS_PER_WORKER || DEFAULT_JOBS_PER_WORKER);
  if (!Number.isInteger(jobsPerWorker) || jobsPerWorker < 1 || jobsPerWorker > 1000)
    throw new Error('N_JOBS_PER_WORKER must be a whole number from 1 to 1000');
  return {
    port,
    role,
    jobsPerWorker,
    databaseUri: env.DATABASE_URI!,
    redisUri: env.REDIS_URI!,
    redisPrefix: env.REDIS_PREFIX!,
    leaseMs: ms('SLIPWAY_AGENT_SERVER_RUN_LEASE_MS', 15_000),
    drainMs: ms('SLIPWAY_AGENT_SERVER_DRAIN_MS', 6_000),
    ...(env.SLIPWAY_AGENT_SERVER_TTL_SWEEP_MS ? { ttlSweepMs: ms('SLIPWAY_AGENT_SERVER_TTL_SWEEP_MS', 0) } : {}),
  };
}

export async function startHost(
  settings: HostSettings,
  serverOptions: Record<string, unknown>,
  ttl: TtlConfig,
): Promise<void> {
  const { role } = settings;
  // In a run's `worker` column and the logs: which kind of process ran it.
  const instanceId = role === 'all' ? randomUUID() : `${role}-${randomUUID()}`;
  const db = createPool(settings.databaseUri);
  const { saver, store } = createPersistence(db, settings.databaseUri, ttl.store);
  const { deserialize } = await apiModule('storage/persist.mjs');
  const lock = await firstConnection(db, databaseAddress(settings.databaseUri));
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK]);
    await saver.setup();
    await store.setup();
    await migrate(lock);
    const moved = await migrateLegacyRecords(lock, deserialize);
    if (moved)
      console.log(`agent server: moved ${moved} records of the earlier single-table storage into their tables`);
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [SCHEMA_LOCK]).catch(() => {});
    lock.release();
  }

  // INFO is not among the commands the deployment's Redis user may run: no ready check.
  const redisOptions = { enableReadyCheck: false, maxRetriesPerRequest: null, connectionName: `agent-${instanceId}` };
  const redis = new Redis(settings.redisUri, redisOptions);
  const subscriber = new Redis(settings.redisUri, redisOptions);
  for (const r of [redis, subscriber]) r.on('error', (err) => console.error('agent server: redis:', err.message));
  const streams = new RunStreams(redis, subscriber, settings.redisPrefix);
  await streams.start();
  const code = await codeId(serverOptions.cwd as string);
  const queue = new RunQueue(
    db,
    streams,
    { instanceId, code, leaseMs: settings.leaseMs, claims: role !== 'api' },
    new RunStats(redis, settings.redisPrefix, (message, fields) => logger.warn(message, fields)),
  );
  wirePersistence(db, saver, store, queue);
  const ops = createOps(db, queue, streams);
  const crons = new PgCrons(db, ops.threads as PgThreads, ops.runs as PgRuns, streams);
  await queue.start();

  let stopServing: () => Promise<void>;
  if (role === 'queue') {
    const worker = await startQueueWorker(ops, {
      ...(serverOptions as Omit<QueueWorkerOptions, 'jobs'>),
      jobs: settings.jobsPerWorker,
    });
    console.log(`agent server queue worker running ${settings.jobsPerWorker} jobs at once (instance ${instanceId})`);
    stopServing = worker.close;
  } else {
    const served = await serve(settings, serverOptions, ops, crons, db, ttl);
    stopServing = served.stop;
    const loops =
      role === 'api' ? 'no worker loops: queue workers run the graphs' : `${settings.jobsPerWorker} worker loops`;
    console.log(`agent server listening on ${served.host} (instance ${instanceId}, ${loops})`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    await stopServing().catch(() => {});
    console.log(`agent server: ${signal}, draining runs in flight (up to ${settings.drainMs} ms)`);
    await queue.drain(settings.drainMs).catch((err) => console.error('agent server: drain failed:', err));
    queue.stop();
    await Promise.allSettled([redis.quit(), subscriber.quit(), store.stop()]);
    await db.end().catch(() => {}); // the saver's pool too
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * The published server over the host's storage (with `jobsPerWorker` worker loops unless queue
 * workers run the graphs), the cron scheduler and the TTL sweeps; returns where it listens and
 * what stops the latter two.
 */
async function serve(
  settings: HostSettings,
  serverOptions: Record<string, unknown>,
  ops: Ops,
  crons: PgCrons,
  db: Db,
  ttl: TtlConfig,
): Promise<{ host: string; stop: () => Promise<void> }> {
  const http = (serverOptions.http ?? {}) as {
    app?: string;
    disable_runs?: boolean;
    disable_store?: boolean;
    disable_assistants?: boolean;
    disable_mcp?: boolean;
  };
  const cronsServed = !http.disable_runs;
  // MCP lists and runs assistants through their routes: served only when they are.
  const mcpServed = !http.disable_mcp && !http.disable_runs && !http.disable_assistants;
  const mountHostRoutes = (app: Hono) => {
    if (cronsServed) mountCronRoutes(app, crons);
    if (mcpServed) mountMcpRoute(app, graphDescriptions(serverOptions.graphs));
  };
  // The host's app applies the project's auth handler, not the server (custom-auth.ts): the server is given none.
  const { auth, ...options } = serverOptions;
  const authenticate = await registerCustomAuth(auth as AuthConfig | undefined, serverOptions.cwd as string);
  await prepareHostApp(
    http.app,
    serverOptions.cwd as string,
    mountHostRoutes,
    { crons: cronsServed, store: !http.disable_store, mcp: mcpServed, a2a: false },
    authenticate,
  );
  const { startServer, StartServerSchema } = await import('@langchain/langgraph-api/server');
  const nWorkers = settings.role === 'api' ? 0 : settings.jobsPerWorker;
  const { host } = await startServer(
    StartServerSchema.parse({ ...options, nWorkers, http: { ...http, app: HOST_APP_SPEC } }),
    { ops },
  );
  const cronTimer = setInterval(
    () => void crons.fireDue().catch((err) => console.error('agent server: cron pass failed:', err.message)),
    CRON_POLL_MS,
  );
  const stopSweeps = startSweeps(db, ttl);
  return {
    host,
    stop: async () => {
      clearInterval(cronTimer);
      stopSweeps();
    },
  };
}
