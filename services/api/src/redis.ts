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
    // Reconnect attempts at most 500 ms apart: jobs waiting in the outbox go out as soon as
    // Redis is back (the relay goes again on `ready`); refused connections cost next to nothing.
    retryStrategy: (attempt) => Math.min(attempt * 100, 500),
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
