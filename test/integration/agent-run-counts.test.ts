import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { createLogger } from '@slipway/logging';
import { deploymentKeyspaceUrl, deploymentRedisUser } from '@slipway/runtime';
import { DURATION_BOUNDS_MS, RUN_STATS_KEY, RunStats } from '../../services/agent-server/src/run-stats.js';
import {
  AgentRunCountsReader,
  MAX_PER_READ,
  RUN_DURATION_BOUNDS_MS,
  takeAgentRunCounts,
} from '../../services/deployer/src/metrics/agent-runs.js';
import { DeploymentDataAccess } from '../../services/deployer/src/provisioning/deployment-data-access.js';
import { createDeploymentRow, dropDeploymentStores } from '../support/deployment-stores.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The agent-server run counters between the host (services/agent-server/src/run-stats.ts, which
 * instances use to count into their deployment's Redis) and the deployer that reads and resets
 * them (services/deployer/src/metrics/agent-runs.ts), on this machine's real Redis. Each test
 * uses the key of a new deployment id, deleted afterwards; what a hostile app could put there
 * must read as zeros or capped counts, never an error.
 */
let redis: Redis;
const ids: string[] = [];
const newDeployment = () => {
  const id = randomUUID();
  ids.push(id);
  return { id, key: `${deploymentRedisUser(id)}:${RUN_STATS_KEY}` };
};

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  for (const id of ids) await redis.del(`${deploymentRedisUser(id)}:${RUN_STATS_KEY}`);
  redis.disconnect();
});

describe('agent-server run counts', () => {
  it('the host and the deployer agree on the key and the duration buckets', () => {
    expect(RUN_DURATION_BOUNDS_MS).toEqual(DURATION_BOUNDS_MS);
  });

  it('reads what instances counted once, by outcome and duration bucket, and resets it', async () => {
    const { id } = newDeployment();
    const stats = new RunStats(redis, deploymentRedisUser(id));
    await Promise.all([stats.started(), stats.started(), stats.started(), stats.started()]);
    await stats.ended('success', 120);
    await stats.ended('success', 200);
    await stats.ended('error', 40);
    await stats.ended('interrupted', 400_000);
    await stats.ended('running', 10); // not a final status: ignored
    await stats.ended('error', null); // ended with no instance seeing it: no duration
    const counts = await takeAgentRunCounts(redis, id);
    expect(counts).toEqual({
      started: 4,
      outcomes: { success: 2, error: 2, interrupted: 1, timeout: 0 },
      durations: [1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    });
    expect(await takeAgentRunCounts(redis, id)).toBeNull();
  });

  it('reads a missing key, a key of another type and garbage values as zeros, capping huge counts', async () => {
    expect(await takeAgentRunCounts(redis, newDeployment().id)).toBeNull();

    const list = newDeployment();
    await redis.rpush(list.key, 'x');
    expect(await takeAgentRunCounts(redis, list.id)).toBeNull();
    expect(await redis.exists(list.key)).toBe(0);

    const garbage = newDeployment();
    await redis.hset(garbage.key, {
      started: '-5',
      success: '1e99',
      error: '99999999999',
      timeout: 'x'.repeat(1000),
      d2: '3',
      extra: '7',
    });
    const counts = await takeAgentRunCounts(redis, garbage.id);
    expect(counts?.started).toBe(0);
    expect(counts?.outcomes).toEqual({ success: 0, error: MAX_PER_READ, interrupted: 0, timeout: 0 });
    expect(counts?.durations[2]).toBe(3);
    expect(await redis.exists(garbage.key)).toBe(0);
  });
});

/**
 * End to end with a REDIS_URL naming database 9: an instance counts through the REDIS_URI its
 * deployment is given (through the Redis front, as the agent-server host connects), the
 * deployer reads where it wrote, and teardown removes the deployment's keys.
 */
describe('agent-server run counts with REDIS_URL naming another database', () => {
  let api: TestApi;
  let access: DeploymentDataAccess;
  let reader: AgentRunCountsReader;
  let keyspace: Redis;
  const made: Array<{ id: string; database: string }> = [];
  const clients: Redis[] = [];
  const log = createLogger({ name: 'agent-run-counts-test', level: 'silent' });

  /** A deployment as an instance sees it: provisioned, its REDIS_URI and REDIS_PREFIX. */
  async function deployment(name: string) {
    const d = await createDeploymentRow(api, name);
    made.push(d);
    const { env } = await access.environment(d.id, d.database);
    // As the agent-server host connects (services/agent-server/src/main.ts).
    const redis = new Redis(env.REDIS_URI, { enableReadyCheck: false, maxRetriesPerRequest: null });
    clients.push(redis);
    return { ...d, env, stats: new RunStats(redis, env.REDIS_PREFIX), key: `${env.REDIS_PREFIX}:${RUN_STATS_KEY}` };
  }

  beforeAll(async () => {
    const db9 = new URL(inject('redisUrl'));
    db9.pathname = '/9';
    api = await startTestApi({ REDIS_URL: db9.toString() });
    expect(new URL(api.config.redisUrl).pathname).toBe('/9');
    access = new DeploymentDataAccess(api.config, api.dataSource, secretsCodec(api.config), log);
    await access.start();
    reader = new AgentRunCountsReader(api.config.redisUrl, log);
    keyspace = new Redis(deploymentKeyspaceUrl(api.config.redisUrl));
  }, 60_000);

  afterAll(async () => {
    for (const d of made)
      await keyspace?.del(`${deploymentRedisUser(d.id)}:${RUN_STATS_KEY}`, `${deploymentRedisUser(d.id)}:other`);
    for (const c of clients) c.disconnect();
    keyspace?.disconnect();
    await reader?.close();
    await access?.close();
    if (api) await dropDeploymentStores(api.config, made);
    await api?.close();
  });

  it('the deployer reads what instances counted (REDIS_URI names no database, the keys are where the deployer looks)', async () => {
    const d = await deployment('runs-db-nine');
    expect(new URL(d.env.REDIS_URI).pathname).toBe('');
    await d.stats.started();
    await d.stats.started();
    await d.stats.ended('success', 120);
    await d.stats.ended('timeout', 70_000);
    // The reader's first read opens its connection (and takes nothing until it is up).
    expect(
      await eventually(
        () => reader.take(d.id),
        (counts) => counts !== null,
        10_000,
        50,
      ),
    ).toEqual({
      started: 2,
      outcomes: { success: 1, error: 0, interrupted: 0, timeout: 1 },
      durations: [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0],
    });
    expect(await reader.take(d.id)).toBeNull();
  });

  it("teardown removes the deployment's keys, run counters among them, and only its own", async () => {
    const gone = await deployment('runs-torn-down');
    const kept = await deployment('runs-kept');
    await gone.stats.started();
    await kept.stats.started();
    await clients.at(-2)!.set(`${gone.env.REDIS_PREFIX}:other`, 'x');
    expect(await keyspace.exists(gone.key, `${gone.env.REDIS_PREFIX}:other`)).toBe(2);

    await access.drop(gone.id);
    expect(await keyspace.exists(gone.key, `${gone.env.REDIS_PREFIX}:other`)).toBe(0);
    expect(await keyspace.call('ACL', 'GETUSER', deploymentRedisUser(gone.id))).toBeNull();
    expect(await keyspace.exists(kept.key)).toBe(1);
    expect((await reader.take(kept.id))?.started).toBe(1);
  });
});
