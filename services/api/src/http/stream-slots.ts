import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { TooManyRequestsError } from '@slipway/domain';
import type { Logger } from '@slipway/logging';

/** How long a lease holds a slot without renewal: a crashed api's streams free their slots within it. */
export const LEASE_MS = 60_000;
const RENEW_MS = LEASE_MS / 3;
/** What a refusal suggests: a slot frees when one of the caller's streams ends, which nothing here can predict. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Takes a slot unless `limit` unexpired leases are held: expired leases (their api died) go
 * first. One script, so two api processes cannot both take the last slot.
 * KEYS[1] the caller's sorted set (lease id → expiry); ARGV: now, expiry, lease id, limit, ttl.
 */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/** A held slot: `release` gives it back (idempotent). */
export interface StreamSlot {
  release(): void;
}

export interface StreamSlotsDeps {
  redis: Redis;
  /** Open streams per caller (`SLIPWAY_SSE_STREAMS_PER_KEY`); 0: unbounded. */
  limit: number;
  /** Prefix of every Redis key of this install (the queue prefix). */
  keyPrefix: string;
  log: Logger;
}

/**
 * The bound on open Server-Sent Events streams per caller (an API key, a JWT subject), counted
 * across every api process in Redis: each open stream holds a lease, a member of the caller's
 * sorted set scored by its expiry, renewed every LEASE_MS / 3 while the stream is open and
 * removed when it ends. A process that dies leaves leases that expire within LEASE_MS, so a crash
 * never leaks slots for longer. When Redis does not answer, the stream is opened anyway, bounded by
 * this process's own count: the same fail-open as the request budgets.
 */
export class StreamSlots {
  private readonly local = new Map<string, number>();

  constructor(private readonly deps: StreamSlotsDeps) {}

  /** A slot for one more stream of `caller`, or a 429 naming the bound and its variable. */
  async acquire(caller: string): Promise<StreamSlot> {
    const { limit, redis, keyPrefix } = this.deps;
    if (limit <= 0) return { release: () => undefined };
    const key = `${keyPrefix}:sse-streams:${caller}`;
    const lease = randomUUID();
    const shared = await this.take(key, lease).catch((err: Error) => {
      this.deps.log.warn({ err }, 'Redis did not answer the stream bound; counting this process’s streams only');
      return null;
    });
    const held = this.local.get(caller) ?? 0;
    if (shared === false || (shared === null && held >= limit)) {
      throw new TooManyRequestsError(
        `At most ${limit} event streams may be open at once per API key (SLIPWAY_SSE_STREAMS_PER_KEY); close one before opening another.`,
        RETRY_AFTER_SECONDS,
      );
    }
    this.local.set(caller, held + 1);
    const renew = shared
      ? setInterval(() => {
          redis
            .multi()
            .zadd(key, 'XX', Date.now() + LEASE_MS, lease)
            .pexpire(key, LEASE_MS)
            .exec()
            .catch(() => undefined);
        }, RENEW_MS)
      : null;
    renew?.unref();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        if (renew) clearInterval(renew);
        const left = (this.local.get(caller) ?? 1) - 1;
        if (left > 0) this.local.set(caller, left);
        else this.local.delete(caller);
        if (shared) redis.zrem(key, lease).catch(() => undefined);
      },
    };
  }

  private async take(key: string, lease: string): Promise<boolean> {
    const now = Date.now();
    const taken = await this.deps.redis.eval(ACQUIRE, 1, key, now, now + LEASE_MS, lease, this.deps.limit, LEASE_MS);
    return taken === 1;
  }
}
