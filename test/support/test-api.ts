import { randomBytes, randomInt } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { inject } from 'vitest';
import { loadConfig, platformCredentials, type Config } from '@slipway/config';
import { RevisionFlow } from '@slipway/pipeline';
import { CgroupWriter, detectCgroups, removeSandboxPool } from '@slipway/runtime';
import { apiNotifications, apiServer, createApp, type AppDeps, type RouteSpec } from '@slipway/api/app';
import { createDataSource, dropDeploymentDatabase, issueApiKey, TenancyRepository, type DataSource } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import { closeQueues, createQueues, OutboxRelay, producerConnection, type Queues } from '@slipway/jobs';
import { createLogger } from '@slipway/logging';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from './database.js';
import { HttpClient } from './http.js';
import { LogCapture } from './log-capture.js';

export interface TestApi {
  baseUrl: string;
  config: Readonly<Config>;
  dataSource: DataSource;
  database: TestDatabase;
  logs: LogCapture;
  /** Producer-side queues under this file's own prefix. */
  queues: Queues;
  /** The outbox relay, not started: call `relay.drain()` to hand pending jobs to Redis. */
  relay: OutboxRelay;
  flow: RevisionFlow;
  /** The bootstrap workspace's admin key. */
  adminKey: string;
  organizationId: string;
  workspaceId: string;
  /** A client authenticated with the admin key; `.as(key)` for another key. */
  http: HttpClient;
  /** Every route the app mounts, as declared (what /openapi.json documents, hidden ones too). */
  routes: readonly RouteSpec[];
  /** Mints a key straight in the database (as the CLI does). */
  mintKey: (input: Partial<Parameters<typeof issueApiKey>[1]>) => Promise<string>;
  close: () => Promise<void>;
}

/**
 * What this test's sandboxed processes left on the machine (their processes are gone by now):
 * the cgroups of its instances and builds, and its sandbox pool's namespaces, interfaces and
 * nftables chains and sets.
 */
async function removeSandboxTraces(dataSource: DataSource, config: Readonly<Config>): Promise<void> {
  const layout = process.getuid?.() === 0 ? await detectCgroups() : null;
  if (!layout) return;
  const cgroups = new CgroupWriter(layout);
  const instances = await dataSource.query(`SELECT id FROM runtime_processes`).catch(() => [] as { id: string }[]);
  for (const { id } of instances as { id: string }[]) await cgroups.handle(`i-${id}`).remove();
  const revisions = await dataSource
    .query(`SELECT id, attempt FROM revisions`)
    .catch(() => [] as { id: string; attempt: number }[]);
  for (const r of revisions as { id: string; attempt: number }[]) {
    for (let a = 0; a <= r.attempt; a++) await cgroups.handle(`b-${r.id}-a${a}`).remove();
  }
  await removeSandboxPool(config.sandbox.subnet);
}

/**
 * The second octets test pools are drawn from: 10.192.0.0/11 less 10.213.0.0/16, the default
 * pool (SLIPWAY_SANDBOX_SUBNET's default), which `npm start` and the tests that start it use. A
 * deployer's host rules for a pool drop every packet from inside it that is not for that pool's
 * own fronts, and an installation keeps them: a test pool inside the default one had its apps'
 * connections to their own Postgres and Redis fronts dropped, and an agent server then hung at
 * start waiting for its database.
 */
const TEST_POOL_OCTETS = Array.from({ length: 32 }, (_, i) => 192 + i).filter((octet) => octet !== 213);

/** A sandbox pool no other test file uses (with overwhelming likelihood): a random /22 of TEST_POOL_OCTETS. */
export function testSandboxSubnet(): string {
  return `10.${TEST_POOL_OCTETS[randomInt(0, TEST_POOL_OCTETS.length)]}.${randomInt(0, 64) * 4}.0/22`;
}

/**
 * Starts the real api (Express app, real Postgres database of its own, real Redis) on an
 * ephemeral port, with logs captured in memory. Nothing of our own is mocked.
 */
export async function startTestApi(
  env: Record<string, string> = {},
  options: Pick<AppDeps, 'extraRoutes'> = {},
): Promise<TestApi> {
  const database = await createTestDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-test-'));
  const adminKey = `slw_test_${randomBytes(24).toString('base64url')}`;
  // Sandbox uids of this test alone (1000 of them): never shared with another test's apps.
  const uidMin = 1_000_000 + randomInt(0, 1_000_000) * 1000;
  const config = loadConfig({
    // Its sandboxes' addresses too (a /22 of 10.192.0.0/11): parallel test files never meet.
    SLIPWAY_SANDBOX_SUBNET: testSandboxSubnet(),
    SLIPWAY_SANDBOX_UID_MIN: String(uidMin),
    SLIPWAY_SANDBOX_UID_MAX: String(uidMin + 999),
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    SLIPWAY_QUEUE_PREFIX: testQueuePrefix(),
    SLIPWAY_SECRETS_KEY: randomBytes(32).toString('base64'),
    SLIPWAY_BOOTSTRAP_API_KEY: adminKey,
    SLIPWAY_DATA_DIR: dataDir,
    // `local` integrations (C8) only see repositories under here: this test's own directory.
    SLIPWAY_LOCAL_REPOS_ROOT: path.join(dataDir, 'repos'),
    SLIPWAY_AGENT_SERVER_HOST_CACHE: inject('agentServerHostCache'),
    LOG_LEVEL: 'debug',
    PORT: '0',
    // Deployments' `url`s name their serving ports unless a test runs an edge (test/e2e/edge.test.ts).
    SLIPWAY_EDGE_HTTP_PORT: 'off',
    ...env,
  });
  const logs = new LogCapture();
  const logger = createLogger({
    name: 'api',
    level: config.logLevel,
    destination: logs,
    secrets: platformCredentials(config),
  });
  const dataSource = createDataSource({ url: database.url, applicationName: 'slipway-test-api', poolSize: 5 });
  await dataSource.initialize();
  const tenancy = await new TenancyRepository(dataSource.manager).bootstrap(config.bootstrapApiKey);
  const redis = producerConnection(config.redisUrl, logger);
  // The producer connection queues nothing while it connects: a test's first request must not
  // race it (readiness, rate limits). Bounded, for a test that starts with Redis away.
  await waitForReady(redis, 10_000);
  const queues = createQueues(redis, config.queuePrefix, logger);
  const flow = new RevisionFlow(config.pipeline);
  const notifications = apiNotifications(config, logger);
  const relay = new OutboxRelay(dataSource, queues, logger, flow, { notifications });
  const app = createApp({ config, dataSource, redis, queues, logger, notifications, ...options });
  // PORT 0 (the default here) is an ephemeral port; a test that needs absolute URLs on the
  // service (upload URLs, C10) passes a fixed free PORT so the default public URL is right.
  const server = apiServer(app, logger).listen(config.port, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    config,
    dataSource,
    database,
    logs,
    queues,
    relay,
    flow,
    adminKey,
    organizationId: tenancy.organizationId,
    workspaceId: tenancy.workspaceId,
    http: new HttpClient(baseUrl, adminKey),
    routes: app.routes,
    mintKey: async (input) =>
      (
        await issueApiKey(dataSource.manager, {
          organizationId: tenancy.organizationId,
          workspaceId: tenancy.workspaceId,
          scope: 'workspace',
          role: 'member',
          ...input,
        })
      ).key,
    close: async () => {
      await app.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await relay.stop();
      await notifications.close();
      await obliterate(queues);
      await closeQueues(queues);
      redis.disconnect();
      await removeSandboxTraces(dataSource, config);
      await dropDeploymentDatabases(dataSource, database.url);
      await dataSource.destroy();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Resolves once `redis` is ready, or after `timeoutMs` whatever its state. */
async function waitForReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise((resolve) => redis.once('ready', resolve)),
    new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
  ]);
  clearTimeout(timer);
}

/** Removes this file's queues and jobs from Redis: only keys under our own prefix. */
async function obliterate(queues: Queues): Promise<void> {
  await Promise.allSettled(Object.values(queues).map((q) => q.obliterate({ force: true })));
}

/**
 * Deployment databases and roles live on the server, outside the file's own database: drop
 * those this file's deployments got (names recorded in its rows, and derived for the ones still
 * provisioning), so a shared Postgres is left as it was found.
 */
async function dropDeploymentDatabases(dataSource: DataSource, url: string): Promise<void> {
  const rows: Array<{ name: string; id: string; database_name: string | null }> = await dataSource.query(
    `SELECT name, id, database_name FROM deployments WHERE listener_id IS NULL`,
  );
  for (const row of rows) {
    await dropDeploymentDatabase(url, row.database_name ?? deploymentDatabaseName(row.name, row.id)).catch(() => {});
  }
}

/** A second api app over a test api's database, config and queues (see `startReplica`). */
export interface Replica {
  http: HttpClient;
  logs: LogCapture;
  close: () => Promise<void>;
}

/**
 * An app built like the harness builds it, over the same config (so the same Redis key prefix:
 * a replica of `api`, as a second api process would be), but from parts the caller chooses:
 * extra routes, or a Postgres/Redis that is not there. Cleanup closes only what it was given to own.
 */
export async function startReplica(
  api: TestApi,
  parts: { dataSource?: DataSource; redisUrl?: string; extraRoutes?: RouteSpec[] } = {},
): Promise<Replica> {
  const logs = new LogCapture();
  const logger = createLogger({
    name: 'api',
    level: 'debug',
    destination: logs,
    secrets: platformCredentials(api.config),
  });
  const redis = producerConnection(parts.redisUrl ?? api.config.redisUrl, logger);
  // The producer connection has no offline queue: wait until it is up, unless it is meant to be down.
  if (!parts.redisUrl) await waitForReady(redis, 10_000);
  const notifications = apiNotifications(api.config, logger);
  const app = createApp({
    config: api.config,
    dataSource: parts.dataSource ?? api.dataSource,
    redis,
    queues: api.queues,
    logger,
    notifications,
    extraRoutes: parts.extraRoutes,
  });
  const server: Server = apiServer(app, logger).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    http: new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, api.adminKey),
    logs,
    close: async () => {
      await app.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await notifications.close();
      redis.disconnect();
    },
  };
}
