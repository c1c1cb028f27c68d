/**
 * Finds Postgres and Redis once per run — env URLs first, then local services on 127.0.0.1,
 * then testcontainers where a Docker engine exists — and migrates a template database that
 * every test file clones (CREATE DATABASE … TEMPLATE), so files never share state.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';
import { createDataSource, runMigrations } from '@slipway/db';
import { ensureConsole } from '../infra/scripts/console.mjs';
import { ensureStartBuild } from '../infra/scripts/start-build.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the Postgres server's `postgres` database, for CREATE/DROP DATABASE. */
    pgServerUrl: string;
    templateDatabase: string;
    redisUrl: string;
    /** Unique per run: prefixes every database and queue key this run creates. */
    runId: string;
    /**
     * SLIPWAY_AGENT_SERVER_HOST_CACHE of every test's control plane: the run's builders install
     * the agent server's dependencies once between them, as builders sharing the setting do.
     */
    agentServerHostCache: string;
  }
}

const STALE_AFTER_MS = 6 * 60 * 60 * 1000;

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

type Stop = () => Promise<unknown>;

async function resolvePostgres(stops: Stop[]): Promise<string> {
  const fromEnv = process.env.SLIPWAY_TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (fromEnv) return withDatabase(fromEnv, 'postgres');
  const local = 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
  if (await postgresAnswers(local)) return local;
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:15').start();
  stops.push(() => container.stop());
  return withDatabase(container.getConnectionUri(), 'postgres');
}

async function resolveRedis(stops: Stop[]): Promise<string> {
  const fromEnv = process.env.SLIPWAY_TEST_REDIS_URL ?? process.env.REDIS_URL;
  if (fromEnv) return fromEnv;
  const local = 'redis://127.0.0.1:6379/0';
  if (await redisAnswers(local)) return local;
  const { RedisContainer } = await import('@testcontainers/redis');
  const container = await new RedisContainer('redis:7').start();
  stops.push(() => container.stop());
  return container.getConnectionUrl();
}

/** A run id is its start time (base-36 milliseconds) followed by this many random bytes in hex. */
const RUN_SALT_BYTES = 3;

/** When the run `runId` started (ms since the epoch); NaN for an id of another shape. */
const runStartedAt = (runId: string): number => parseInt(runId.slice(0, -2 * RUN_SALT_BYTES), 36);

/** Drops databases this harness left behind in runs that crashed hours ago. */
async function dropStale(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname ~ '^slipway_(t|tpl)_[a-z0-9]+'`,
  );
  for (const { datname } of rows) {
    const stamp = runStartedAt(datname.split('_')[2] ?? '');
    if (Number.isFinite(stamp) && Date.now() - stamp > STALE_AFTER_MS) {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`).catch(() => {});
    }
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The api serves the built web console: build it when its sources changed (a no-op otherwise),
  // once per run, before any file starts an api.
  ensureConsole();
  // Service processes run their compiled entries, as `npm start` does (service-process.ts): built
  // from the current sources when they changed, once per run.
  await ensureStartBuild();
  const stops: Stop[] = [];
  const pgServerUrl = await resolvePostgres(stops);
  const redisUrl = await resolveRedis(stops);
  const runId = `${Date.now().toString(36)}${randomBytes(RUN_SALT_BYTES).toString('hex')}`;
  const templateDatabase = `slipway_tpl_${runId}`;

  const admin = new pg.Client({ connectionString: pgServerUrl });
  await admin.connect();
  await dropStale(admin);
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(templateDatabase)}`);
  const ds = createDataSource({
    url: withDatabase(pgServerUrl, templateDatabase),
    applicationName: 'slipway-test-setup',
    poolSize: 1,
  });
  await ds.initialize();
  await runMigrations(ds);
  await ds.destroy();

  project.provide('pgServerUrl', pgServerUrl);
  project.provide('templateDatabase', templateDatabase);
  project.provide('redisUrl', redisUrl);
  project.provide('runId', runId);
  // npm test's lanes are two vitest runs: they share one install (test.mjs makes and removes it).
  const sharedHostCache = process.env.SLIPWAY_TEST_HOST_CACHE;
  const agentServerHostCache = sharedHostCache || path.join(tmpdir(), `slipway-test-host-${runId}`);
  project.provide('agentServerHostCache', agentServerHostCache);

  return async () => {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
      `slipway_%${runId}%`,
    ]);
    for (const { datname } of rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    }
    await admin.end();
    if (!sharedHostCache) rmSync(agentServerHostCache, { recursive: true, force: true });
    for (const stop of stops) await stop();
  };
}
