import type { EntityManager } from '@slipway/db';
import { JOB_CATALOG, type JobName, type JobPayloads } from './catalog.js';

/** The channel every outbox insert notifies, so relays wake at once instead of at their next poll. */
export const OUTBOX_CHANNEL = 'slipway_outbox';

export interface OutboxOptions {
  delayMs?: number;
}

/**
 * Records a job in the outbox, inside the caller's transaction: the job exists exactly when the
 * business rows that call for it commit. The relay hands it to BullMQ later.
 */
export async function enqueueInOutbox<N extends JobName>(
  manager: EntityManager,
  name: N,
  payload: JobPayloads[N],
  options: OutboxOptions = {},
): Promise<void> {
  const entry = JOB_CATALOG[name];
  // The notification wakes relays at once instead of at their next poll; delivered on commit,
  // dropped on rollback. Sent by the same statement: one round trip per job.
  await manager.query(
    `WITH row AS (INSERT INTO outbox (queue, job_name, job_id, payload, delay_ms) VALUES ($1, $2, $3, $4, $5) RETURNING id)
     SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM row`,
    [entry.queue, name, entry.jobId(payload), JSON.stringify(payload), options.delayMs ?? 0],
  );
}
