import type { Redis } from 'ioredis';
import { Counter, type Registry } from 'prom-client';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateLimitSettings } from '@slipway/config';
import { TooManyRequestsError } from '@slipway/domain';
import type { Logger } from '@slipway/logging';

/** The budgets a request can be charged to. */
export type Budget = 'key' | 'listener-agent' | 'address' | 'auth-failures';

/** A Redis call slower than this counts as Redis being away: the request is not held up by it. */
const STORE_TIMEOUT_MS = 500;
const LOG_EVERY_MS = 30_000;
/**
 * Once Redis failed to answer, checks count locally for this long before Redis is asked again:
 * an absent Redis holds requests up (STORE_TIMEOUT_MS) about once a second, not on every check.
 */
const STORE_RETRY_MS = 1_000;
/**
 * How long a credential seen with no failed authentications is trusted without asking Redis
 * again: the lockout check then costs no round trip on most requests, and a lockout counted by
 * another process takes effect here within this time.
 */
export const LOCKOUT_RECHECK_MS = 1_000;
const MAX_CLEAR_CREDENTIALS = 10_000;
/**
 * A busy caller's requests are charged to the shared count in grants: one Redis call takes up to
 * this many points (and never more than 1/GRANT_SHARE of the budget) for this process to hand
 * out without asking again. A grant starts at one point and doubles while the caller keeps
 * coming back within GRANT_GROWTH_MS.
 */
const GRANT_MAX = 16;
const GRANT_SHARE = 50;
const GRANT_GROWTH_MS = 1_000;
const MAX_GRANTS = 10_000;

/** Points this process took from a caller's shared count and has not handed out yet. */
interface Grant {
  points: number;
  /** The end of the window they were taken in: they are worth nothing after it. */
  until: number;
  /** The size of the last grant taken, and when: the next one doubles if it comes soon. */
  size: number;
  takenAt: number;
  /** Set while this process asks Redis for a grant: other requests of the caller wait for it. */
  taking?: Promise<void>;
  /** The window's budget is spent (a 429 until `until`): no Redis call until then. */
  spent?: RateLimiterRes;
}

interface Limiter {
  points: number;
  /** Shared by every api process: the budget is per caller, not per replica. */
  shared: RateLimiterAbstract;
  /** This process's own count, used while Redis does not answer. */
  local: RateLimiterAbstract;
}

export interface RateLimitsDeps {
  settings: RateLimitSettings;
  redis: Redis;
  /** Prefix of every Redis key of this install (the queue prefix): budgets are per install. */
  keyPrefix: string;
  log: Logger;
  registry: Registry;
}

/**
 * Request budgets (docs/api.md, Errors: 429 with `Retry-After`), counted in Redis so every api replica
 * draws on the same budget. When Redis does not answer (down, or slower than 500 ms) a request
 * is never refused for that: each process falls back to counting on its own, with the same
 * numbers, for a second before it asks Redis again, and says so in
 * `slipway_rate_limit_store_errors_total` and a warning at most every 30 s. Fail-open for
 * availability, still bounded per process.
 */
export class RateLimits {
  private readonly limiters = new Map<Budget, Limiter>();
  private readonly limited: Counter<'budget'>;
  private readonly storeErrors: Counter;
  private lastLogged = 0;
  /** Until when Redis is not asked (it just failed to answer). */
  private storeAwayUntil = 0;
  /** Credentials with no failed authentications at the last check, and until when that is trusted. */
  private readonly clearUntil = new Map<string, number>();
  private readonly grants = new Map<string, Grant>();

  constructor(private readonly deps: RateLimitsDeps) {
    const { settings, redis, keyPrefix } = deps;
    const budgets: Record<Budget, { points: number; duration: number }> = {
      key: { points: settings.perKey, duration: settings.windowSeconds },
      'listener-agent': { points: settings.perListenerAgent, duration: settings.windowSeconds },
      address: { points: settings.perAddress, duration: settings.windowSeconds },
      'auth-failures': { points: settings.authFailures, duration: settings.authFailureWindowSeconds },
    };
    for (const [budget, { points, duration }] of Object.entries(budgets) as Array<
      [Budget, { points: number; duration: number }]
    >) {
      if (points <= 0) continue;
      this.limiters.set(budget, {
        points,
        shared: new RateLimiterRedis({
          storeClient: redis,
          keyPrefix: `${keyPrefix}:ratelimit:${budget}`,
          points,
          duration,
          rejectIfRedisNotReady: true,
        }),
        local: new RateLimiterMemory({ keyPrefix: budget, points, duration }),
      });
    }
    this.limited = new Counter({
      name: 'slipway_rate_limited_total',
      help: 'Requests refused with 429, by the budget that was spent.',
      labelNames: ['budget'],
      registers: [deps.registry],
    });
    this.storeErrors = new Counter({
      name: 'slipway_rate_limit_store_errors_total',
      help: 'Budget checks this process counted on its own: Redis did not answer them, or had not within the second before.',
      registers: [deps.registry],
    });
  }

  /**
   * Charges one request to `id`'s budget; 429 once it is spent. A point comes from this
   * process's grant for the caller when it holds one, else from a new grant (one Redis call).
   * Every point handed out was counted in the shared count first, so no window serves more than
   * the budget across all processes; points a process holds unused are the most a caller may be
   * refused early by, on another process (under GRANT_MAX, and under 1/GRANT_SHARE of the budget).
   */
  async consume(budget: Exclude<Budget, 'auth-failures'>, id: string): Promise<void> {
    const limiter = this.limiters.get(budget);
    if (!limiter) return;
    const key = `${budget}:${id}`;
    for (;;) {
      const grant = this.grants.get(key);
      const now = Date.now();
      if (grant && now < grant.until) {
        if (grant.spent)
          throw this.refuse(budget, new RateLimiterRes(0, grant.until - now, limiter.points + 1), 'Too many requests.');
        if (grant.points > 0) {
          grant.points -= 1;
          return;
        }
      }
      if (grant?.taking) {
        await grant.taking.catch(() => {});
        continue;
      }
      const next = this.nextGrant(key, id, limiter, grant, now);
      await next.taking;
    }
  }

  /** Starts taking a grant for `key` from the shared count; `taking` settles once it is held (or found spent). */
  private nextGrant(key: string, id: string, limiter: Limiter, previous: Grant | undefined, now: number): Grant {
    const largest = Math.max(1, Math.min(GRANT_MAX, Math.floor(limiter.points / GRANT_SHARE)));
    const size = previous && now - previous.takenAt < GRANT_GROWTH_MS ? Math.min(largest, previous.size * 2) : 1;
    if (this.grants.size >= MAX_GRANTS) this.grants.clear(); // their unused points are given up: never more served
    const grant: Grant = { points: 0, until: 0, size, takenAt: now };
    grant.taking = this.run(limiter, (l) => l.consume(id, size))
      .then(
        (res) => void Object.assign(grant, { points: size, until: Date.now() + res.msBeforeNext }),
        (err) => {
          if (!(err instanceof RateLimiterRes)) throw err;
          // Counted past the budget: what was left of it before this grant is still ours.
          const left = Math.max(0, Math.min(size, limiter.points - (err.consumedPoints - size)));
          Object.assign(grant, {
            points: left,
            until: Date.now() + err.msBeforeNext,
            spent: left === 0 ? err : undefined,
          });
        },
      )
      .finally(() => (grant.taking = undefined));
    this.grants.set(key, grant);
    return grant;
  }

  /**
   * 429 while this credential (an API key by its hash, a token by its digest) has used up its
   * failed authentications; checked before the credential is. Only a credential that failed to
   * authenticate is ever counted, so a valid key is never refused here: what is locked is one
   * key's attempts, never an address's or anyone else's.
   */
  async assertCredentialNotLockedOut(credentialId: string): Promise<void> {
    const limiter = this.limiters.get('auth-failures');
    if (!limiter) return;
    const now = Date.now();
    if ((this.clearUntil.get(credentialId) ?? 0) > now) return;
    const res = await this.run(limiter, (l) => l.get(credentialKey(credentialId)));
    if (res && res.consumedPoints >= limiter.points) {
      throw this.refuse('auth-failures', res, 'Too many failed authentications with this credential.');
    }
    if (!res || res.consumedPoints === 0) {
      if (this.clearUntil.size >= MAX_CLEAR_CREDENTIALS) this.clearUntil.clear();
      this.clearUntil.set(credentialId, now + LOCKOUT_RECHECK_MS);
    }
  }

  /**
   * Counts a failed authentication against the credential and against the client address. Returns
   * the 429 to answer instead of the 401 once either has used up its failures, else null. An
   * address past its budget only hears 429 for credentials that fail: a valid key from it (a
   * colleague behind the same NAT) still works.
   */
  async recordAuthFailure(address: string, credentialId: string): Promise<TooManyRequestsError | null> {
    const limiter = this.limiters.get('auth-failures');
    if (!limiter) return null;
    this.clearUntil.delete(credentialId);
    const [byCredential, byAddress] = await Promise.all(
      [credentialKey(credentialId), `address:${address}`].map((id) => this.countFailure(limiter, id)),
    );
    if (byCredential)
      return this.refuse('auth-failures', byCredential, 'Too many failed authentications with this credential.');
    if (byAddress) return this.refuse('auth-failures', byAddress, 'Too many failed authentications from this address.');
    return null;
  }

  /** One more failure for `id`; the count once it is past the budget, else null. */
  private async countFailure(limiter: Limiter, id: string): Promise<RateLimiterRes | null> {
    try {
      await this.run(limiter, (l) => l.consume(id));
      return null;
    } catch (err) {
      if (err instanceof RateLimiterRes) return err;
      throw err;
    }
  }

  private refuse(budget: Budget, res: RateLimiterRes, what: string): TooManyRequestsError {
    this.limited.inc({ budget });
    const seconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    return new TooManyRequestsError(`${what} Retry in ${seconds} second${seconds === 1 ? '' : 's'}.`, seconds);
  }

  /** Runs `op` on the shared count, or on this process's own when Redis does not answer. */
  private async run<T>(limiter: Limiter, op: (l: RateLimiterAbstract) => Promise<T>): Promise<T> {
    if (Date.now() < this.storeAwayUntil) {
      this.storeErrors.inc();
      return op(limiter.local);
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not answer within ${STORE_TIMEOUT_MS} ms`)),
        STORE_TIMEOUT_MS,
      );
    });
    try {
      return await Promise.race([op(limiter.shared), timeout]);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw err;
      this.storeFailed(err);
      return op(limiter.local);
    } finally {
      clearTimeout(timer);
    }
  }

  private storeFailed(err: unknown): void {
    this.storeErrors.inc();
    this.storeAwayUntil = Date.now() + STORE_RETRY_MS;
    const now = Date.now();
    if (now - this.lastLogged < LOG_EVERY_MS) return;
    this.lastLogged = now;
    this.deps.log.warn({ err }, 'rate limits: Redis does not answer; each api process counts on its own until it does');
  }
}

function credentialKey(credentialId: string): string {
  return `credential:${credentialId}`;
}
