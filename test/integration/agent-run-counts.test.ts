import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { deploymentRedisUser } from '@slipway/runtime';
import { DURATION_BOUNDS_MS, RUN_STATS_KEY, RunStats } from '../../libs/agent-server/host/src/run-stats.js';
import { MAX_PER_READ, RUN_DURATION_BOUNDS_MS, takeAgentRunCounts } from '../../services/deployer/src/metrics/agent-runs.js';

/**
 * The agent-server run counters between the host (libs/agent-server/host/src/run-stats.ts, which
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
    await redis.hset(garbage.key, { started: '-5', success: '1e99', error: '99999999999', timeout: 'x'.repeat(1000), d2: '3', extra: '7' });
    const counts = await takeAgentRunCounts(redis, garbage.id);
    expect(counts?.started).toBe(0);
    expect(counts?.outcomes).toEqual({ success: 0, error: MAX_PER_READ, interrupted: 0, timeout: 0 });
    expect(counts?.durations[2]).toBe(3);
    expect(await redis.exists(garbage.key)).toBe(0);
  });
});
