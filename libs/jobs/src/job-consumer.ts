import { UnrecoverableError, Worker, type Job, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '@slipway/logging';
import { isJobName, jobsOf, parsePayload, type JobPayloads, type JobsOn, type QueueName } from './catalog.js';

export interface JobContext {
  job: Job;
  /** Carries jobId, job name, revisionId/deploymentId and requestId. */
  log: Logger;
}

export type JobHandler<N extends keyof JobPayloads> = (payload: JobPayloads[N], ctx: JobContext) => Promise<void>;

/** Exactly one handler per job the queue carries: a missing one is a compile error. */
export type HandlerMap<Q extends QueueName> = { [N in JobsOn<Q>]: JobHandler<N> };

export interface JobConsumerOptions<Q extends QueueName> {
  queue: Q;
  handlers: HandlerMap<Q>;
  connection: Redis;
  prefix: string;
  concurrency: number;
  log: Logger;
  /** Overrides for this queue (e.g. a custom backoff strategy, stalled jobs re-run). */
  options?: Pick<WorkerOptions, 'settings' | 'maxStalledCount'>;
}

/**
 * A job consumer: one BullMQ Worker per queue, dispatching on `job.name` ("worker" alone, in this
 * codebase, means a worker process: the builder or the deployer, libs/worker). Payloads are re-validated
 * before a handler runs. Stalled jobs are not re-run by BullMQ (`maxStalledCount: 0`): the
 * reconciler, which sees the database, decides whether the revision's phase is retried.
 */
export function createJobConsumer<Q extends QueueName>({
  queue,
  handlers,
  connection,
  prefix,
  concurrency,
  log,
  options,
}: JobConsumerOptions<Q>): Worker {
  const expected = jobsOf(queue).sort();
  const given = Object.keys(handlers).sort();
  if (expected.join() !== given.join()) {
    throw new Error(`Worker for ${queue} must handle exactly [${expected}], got [${given}]`);
  }
  const table = handlers as unknown as Record<string, JobHandler<keyof JobPayloads>>;
  const worker = new Worker(
    queue,
    async (job) => {
      if (!isJobName(job.name) || !table[job.name])
        throw new UnrecoverableError(`No handler for job ${job.name} on ${queue}`);
      let payload: JobPayloads[keyof JobPayloads];
      try {
        payload = parsePayload(job.name, job.data);
      } catch (err) {
        throw new UnrecoverableError((err as Error).message);
      }
      const ids = payload as Partial<Record<'revisionId' | 'deploymentId' | 'requestId', string>>;
      const jobLog = log.child({
        jobId: job.id,
        job: job.name,
        revisionId: ids.revisionId,
        deploymentId: ids.deploymentId,
        requestId: ids.requestId,
      });
      jobLog.debug('job started');
      await table[job.name]!(payload, { job, log: jobLog });
      jobLog.debug('job done');
    },
    {
      connection,
      prefix,
      concurrency,
      maxStalledCount: 0,
      stalledInterval: 15_000,
      lockDuration: 30_000,
      autorun: true,
      ...options,
    },
  );
  worker.on('error', (err) => log.warn({ err, queue }, 'worker error'));
  worker.on('failed', (job, err) => log.warn({ err, queue, jobId: job?.id, job: job?.name }, 'job failed'));
  return worker;
}
