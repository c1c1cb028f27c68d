import type { EntityManager } from '@slipway/db';
import { JOB_CATALOG, type JobName, type JobPayloads } from './catalog.js';

/**
 * The channel every outbox insert notifies (the outbox's statement trigger, migration
 * OutboxNotify), so relays wake at once instead of at their next poll.
 */
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
export function enqueueInOutbox<N extends JobName>(
  manager: EntityManager,
  name: N,
  payload: JobPayloads[N],
  options: OutboxOptions = {},
): Promise<void> {
  return enqueueAllInOutbox(manager, [outboxJob(name, payload, options)]);
}

/**
 * Records `jobs` in the outbox in one statement (one round trip), in their order: what a
 * transaction that calls for several jobs at one point sends. The outbox's trigger notifies
 * the relays (OUTBOX_CHANNEL) when the transaction commits.
 */
export async function enqueueAllInOutbox(manager: EntityManager, jobs: readonly OutboxJob[]): Promise<void> {
  if (!jobs.length) return;
  const { sql, params } = outboxInsert(jobs);
  await manager.query(sql, params);
}

/**
 * The INSERT that records `jobs`, its parameters numbered from `$${paramOffset + 1}`: for a
 * statement that carries it as a data-modifying CTE (which runs whether or not it is read).
 */
export function outboxInsert(jobs: readonly OutboxJob[], paramOffset = 0): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const rows = jobs.map((job) => {
    const entry = JOB_CATALOG[job.name];
    params.push(
      entry.queue,
      job.name,
      (entry.jobId as (p: unknown) => string)(job.payload),
      JSON.stringify(job.payload),
      job.delayMs,
    );
    const at = paramOffset + params.length - 5;
    return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5})`;
  });
  return { sql: `INSERT INTO outbox (queue, job_name, job_id, payload, delay_ms) VALUES ${rows.join(', ')}`, params };
}
