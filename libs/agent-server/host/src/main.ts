// The host's storage and lifecycle, once server.mjs has loaded the project's graphs: schema set-up
// (under one advisory lock), checkpoints and store, the row-level ops, the run queue and the Redis
// streams, the published server, and a draining shutdown on SIGTERM.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { codeId } from './code-id.js';
import { mountCronRoutes } from './cron-routes.js';
import { PgCrons } from './crons.js';
import { createPool } from './db.js';
import { HOST_APP_SPEC, prepareHostApp } from './http-app.js';
import { migrateLegacyRecords } from './legacy.js';
import { createOps } from './ops.js';
import { createPersistence, wirePersistence } from './persistence.js';
import { RunQueue } from './queue.js';
import type { PgRuns } from './runs.js';
import { migrate } from './schema.js';
import { RunStreams } from './streams.js';
import type { PgThreads } from './threads.js';
import { startSweeps, ttlConfig, type TtlConfig } from './ttl.js';
import { apiModule } from './upstream.js';

/** Instances of a deployment start together: their schema set-ups take turns under this lock. */
const SCHEMA_LOCK = 0x534c4950; // "SLIP"
/** How often each instance's scheduler looks for due crons. */
const CRON_POLL_MS = 1_000;

export { ttlConfig };

export interface HostSettings {
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
  if (missing.length) throw new Error(`${missing.join(', ')} not set: the agent server keeps its threads in the deployment database and streams runs through its Redis.`);
  const ms = (name: string, fallback: number) => {
    const value = Number(env[name] ?? fallback);
    if (!Number.isFinite(value) || value < 100) throw new Error(`${name} must be a number of milliseconds of at least 100`);
    return value;
  };
  return {
    databaseUri: env.DATABASE_URI!,
    redisUri: env.REDIS_URI!,
    redisPrefix: env.REDIS_PREFIX!,
    leaseMs: ms('SLIPWAY_AGENT_SERVER_RUN_LEASE_MS', 15_000),
    drainMs: ms('SLIPWAY_AGENT_SERVER_DRAIN_MS', 6_000),
    ...(env.SLIPWAY_AGENT_SERVER_TTL_SWEEP_MS ? { ttlSweepMs: ms('SLIPWAY_AGENT_SERVER_TTL_SWEEP_MS', 0) } : {}),
  };
}

export async function startHost(settings: HostSettings, serverOptions: Record<string, unknown>, ttl: TtlConfig): Promise<void> {
  const instanceId = randomUUID();
  const db = createPool(settings.databaseUri);
  const { saver, store } = createPersistence(db, settings.databaseUri, ttl.store);
  const { deserialize } = await apiModule('storage/persist.mjs');
  const lock = await db.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK]);
    await saver.setup();
    await store.setup();
    await migrate(lock);
    const moved = await migrateLegacyRecords(lock, deserialize);
    if (moved) console.log(`agent server: moved ${moved} records of the earlier single-table storage into their tables`);
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
  const queue = new RunQueue(db, streams, { instanceId, code, leaseMs: settings.leaseMs });
  wirePersistence(db, saver, store, queue);
  const ops = createOps(db, queue, streams);
  const crons = new PgCrons(db, ops.threads as PgThreads, ops.runs as PgRuns, streams);
  await queue.start();

  const http = (serverOptions.http ?? {}) as { app?: string; disable_runs?: boolean; disable_store?: boolean };
  const cronsServed = !http.disable_runs;
  await prepareHostApp(http.app, serverOptions.cwd as string, (app) => cronsServed && mountCronRoutes(app, crons), {
    crons: cronsServed,
    store: !http.disable_store,
  });
  const { startServer, StartServerSchema } = await import('@langchain/langgraph-api/server');
  const { host } = await startServer(StartServerSchema.parse({ ...serverOptions, http: { ...http, app: HOST_APP_SPEC } }), { ops });
  console.log(`agent server listening on ${host} (instance ${instanceId})`);
  const cronTimer = setInterval(() => void crons.fireDue().catch((err) => console.error('agent server: cron pass failed:', err.message)), CRON_POLL_MS);
  const stopSweeps = startSweeps(db, ttl);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    clearInterval(cronTimer);
    stopSweeps();
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
