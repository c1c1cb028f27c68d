import { DelayedError, type Job } from 'bullmq';

/** A job that needs the runtime owner, on a deployer that is not, comes back after this. */
const PARK_MS = 2_000;

/**
 * For a job that only the runtime owner can do (cloud-hosted rollouts and teardowns) reaching a
 * deployer that is not the owner: back to `delayed`, so any deployer picks it up again shortly.
 * A delayed job is "pending" to the reconciler, so waiting costs no attempt; the phase deadline
 * still bounds it. (BullMQ's documented way: moveToDelayed with the job's token, then DelayedError.)
 */
export async function parkUntilOwner(job: Job): Promise<never> {
  await job.moveToDelayed(Date.now() + PARK_MS, job.token);
  throw new DelayedError('Waiting for the deployer that owns the process runtime.');
}
