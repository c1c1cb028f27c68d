import { Queue } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '@slipway/logging';
import { QUEUES, type QueueName } from './catalog.js';

function logErrors(redis: Redis, log: Logger, role: string): Redis {
  let last = 0;
  redis.on('error', (err) => {
    if (Date.now() - last < 30_000) return;
    last = Date.now();
    log.warn({ err, role }, 'redis connection error');
  });
  return redis;
}

/**
 * Producer side (api, relay): fail fast. No offline queue, so an outage surfaces at once as an
 * error the outbox absorbs, instead of requests hanging on a queued command.
 */
export function producerConnection(url: string, log: Logger): Redis {
  const options: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    // Reconnect attempts at most 500 ms apart: jobs waiting in the outbox go out as soon as
    // Redis is back (the relay goes again on `ready`); refused connections cost next to nothing.
    retryStrategy: (attempt) => Math.min(attempt * 100, 500),
  };
  return logErrors(new Redis(url, options), log, 'producer');
}

/** Worker side: wait out outages (BullMQ requires `maxRetriesPerRequest: null` for workers). */
export function workerConnection(url: string, log: Logger): Redis {
  const options: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(attempt * 500, 5_000),
  };
  return logErrors(new Redis(url, options), log, 'worker');
}

export type Queues = Record<QueueName, Queue>;

/** One Queue object per queue, sharing a connection, each with an error listener. */
export function createQueues(connection: Redis, prefix: string, log: Logger): Queues {
  const make = (name: QueueName) => {
    const queue = new Queue(name, { connection, prefix });
    queue.on('error', (err) => log.warn({ err, queue: name }, 'queue error'));
    return queue;
  };
  return {
    builds: make(QUEUES.builds),
    rollouts: make(QUEUES.rollouts),
    maintenance: make(QUEUES.maintenance),
    webhooks: make(QUEUES.webhooks),
  };
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.allSettled(Object.values(queues).map((q) => q.close()));
}
