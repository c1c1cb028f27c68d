import type { EntityManager } from '@slipway/db';
import { JOB_CATALOG, type JobName, type JobPayloads } from './catalog.js';

/** The channel every outbox insert notifies, so relays wake at once instead of at their next poll. */
export const OUTBOX_CHANNEL = 'slipway_outbox';

export interface OutboxOptions {
  delayMs?: number;
}

/** A job to record in the outbox (`outboxJob`), typed by the catalog like `enqueueInOutbox`'s arguments. */
export interface OutboxJob {
  readonly name: JobName;
  readonly payload: JobPayloads[JobName];
  readonly delayMs: number;
}

export function outboxJob<N extends JobName>(name: N, payload: JobPayloads[N], options: OutboxOptions = {}): OutboxJob {
  return { name, payload, delayMs: options.delayMs ?? 0 };
}

/**
 * Records a job in the outbox, inside the caller's transaction: the job exists exactly when the
 * business rows that call for it commit. The relay hands it to BullMQ later.
 */
export function enqueueInOutbox<N extends JobName>(manager: EntityManager, name: N, payload: JobPayloads[N], options: OutboxOptions = {}): Promise<void> {
  return enqueueAllInOutbox(manager, [outboxJob(name, payload, options)]);
}

/**
 * Records `jobs` in the outbox in one statement (one round trip, one notification), in their
 * order: what a transaction that calls for several jobs at one point sends.
 */
export async function enqueueAllInOutbox(manager: EntityManager, jobs: readonly OutboxJob[]): Promise<void> {
  if (!jobs.length) return;
  const params: unknown[] = [];
  const rows = jobs.map((job) => {
    const entry = JOB_CATALOG[job.name];
    params.push(entry.queue, job.name, (entry.jobId as (p: unknown) => string)(job.payload), JSON.stringify(job.payload), job.delayMs);
    const at = params.length - 5;
    return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5})`;
  });
  // The notification wakes relays at once instead of at their next poll; delivered on commit,
  // dropped on rollback. Sent by the same statement, once.
  await manager.query(
    `WITH rows AS (INSERT INTO outbox (queue, job_name, job_id, payload, delay_ms) VALUES ${rows.join(', ')} RETURNING id)
     SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM (SELECT 1 FROM rows LIMIT 1) one`,
    params,
  );
}
