import { Redis } from 'ioredis';
import type { Logger } from '@slipway/logging';

/**
 * The api's Redis connection fails fast (docs/architecture.md, Rules): no offline queue,
 * one retry per command, so a Redis outage shows up as a quick error, never a hung request.
 * Reconnects continue in the background; errors are logged at most every 30 s.
 */
export function createProducerRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  let lastLogged = 0;
  redis.on('error', (err) => {
    const now = Date.now();
    if (now - lastLogged < 30_000) return;
    lastLogged = now;
    log.warn({ err }, 'redis connection error');
  });
  return redis;
}
