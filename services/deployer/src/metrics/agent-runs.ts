import type { Redis } from 'ioredis';
import { producerConnection } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { deploymentKeyspaceUrl, deploymentRedisUser } from '@slipway/runtime';

/**
 * The agent-server host's run counters (services/agent-server/src/run-stats.ts: the key, fields
 * and bounds are its contract — change both together): a hash under the deployment's Redis
 * prefix that its instances add to, read and deleted here.
 */
const RUN_STATS_KEY = 'slipway:run-stats';
export const RUN_DURATION_BOUNDS_MS = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000];
export const RUN_OUTCOMES = ['success', 'error', 'interrupted', 'timeout'] as const;
const DURATION_FIELDS = Array.from({ length: RUN_DURATION_BOUNDS_MS.length + 1 }, (_, i) => `d${i}`);
const FIELDS = ['started', ...RUN_OUTCOMES, ...DURATION_FIELDS];
/**
 * The most a field may add per read (every FLUSH_MS): far above what an agent server finishes
 * in seconds, low enough that a hostile app's numbers cannot swamp its own history.
 */
export const MAX_PER_READ = 10_000;

export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** What a deployment's instances reported since the last read. */
export interface AgentRunCounts {
  started: number;
  outcomes: Record<RunOutcome, number>;
  /** Ended runs per duration bucket: `durations[i]` at most RUN_DURATION_BOUNDS_MS[i], the last one longer. */
  durations: number[];
}

/** A counter the app wrote: a non-negative integer up to MAX_PER_READ; anything else counts 0. */
export function countOf(raw: unknown): number {
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) return 0;
  return Math.min(Number(raw), MAX_PER_READ);
}

/** The counts in HMGET's answer (FIELDS order); null when nothing was counted. */
export function parseRunCounts(values: readonly unknown[]): AgentRunCounts | null {
  const n = FIELDS.map((_, i) => countOf(values[i]));
  if (n.every((v) => v === 0)) return null;
  return {
    started: n[0]!,
    outcomes: Object.fromEntries(RUN_OUTCOMES.map((o, i) => [o, n[1 + i]!])) as Record<RunOutcome, number>,
    durations: n.slice(1 + RUN_OUTCOMES.length),
  };
}

/**
 * The duration at quantile `q` of a histogram of RUN_DURATION_BOUNDS_MS buckets, interpolated
 * linearly inside its bucket (the last, unbounded one counts as its lower bound): approximate.
 */
export function histogramQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (!total) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i]!;
    if (c && below + c >= rank) {
      const lower = i === 0 ? 0 : RUN_DURATION_BOUNDS_MS[i - 1]!;
      const upper = RUN_DURATION_BOUNDS_MS[i];
      if (upper === undefined) return lower;
      return lower + ((upper - lower) * (rank - below)) / c;
    }
    below += c;
  }
  return RUN_DURATION_BOUNDS_MS[RUN_DURATION_BOUNDS_MS.length - 1]!;
}

/**
 * Reads and resets a deployment's run counters in one MULTI (HMGET of the known fields only, then
 * DEL), on the platform's own Redis connection. The app owns the key: a missing key, a key of
 * another type or garbage values give zeros, never an error.
 */
export async function takeAgentRunCounts(redis: Redis, deploymentId: string): Promise<AgentRunCounts | null> {
  const key = `${deploymentRedisUser(deploymentId)}:${RUN_STATS_KEY}`;
  const replies = await redis
    .multi()
    .hmget(key, ...FIELDS)
    .del(key)
    .exec();
  const [err, values] = replies?.[0] ?? [null, null];
  if (err || !Array.isArray(values)) return null;
  return parseRunCounts(values);
}

/**
 * Takes deployments' run counters where their instances write them: the deployments' keyspace
 * (DEPLOYMENT_REDIS_DB of REDIS_URL, whatever database REDIS_URL names for the control plane),
 * on a connection opened at the first read that fails fast (metrics never wait on Redis): while
 * it is not connected, a read takes nothing and the counters wait in Redis for the next one.
 */
export class AgentRunCountsReader {
  private redis: Redis | null = null;

  constructor(
    /** The control plane's REDIS_URL. */
    private readonly redisUrl: string,
    private readonly log: Logger,
  ) {}

  take(deploymentId: string): Promise<AgentRunCounts | null> {
    this.redis ??= producerConnection(deploymentKeyspaceUrl(this.redisUrl), this.log);
    if (this.redis.status !== 'ready') return Promise.resolve(null);
    return takeAgentRunCounts(this.redis, deploymentId);
  }

  async close(): Promise<void> {
    await this.redis?.quit().catch(() => undefined);
    this.redis = null;
  }
}
