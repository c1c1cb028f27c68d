import { randomBytes } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { JOB_CATALOG, JOB_QUEUES } from '@slipway/jobs';
import { percentile } from '../support/measure.js';
import { bounded, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/** When a revision's rollout job reached its worker, on `clock`. */
interface Arrivals {
  clock: () => number;
  handedAt: (revisionId: string) => Promise<number>;
  close?: () => Promise<void>;
}

/**
 * Sequential creates: from sending `POST /v2/deployments` until the revision's rollout job
 * reaches a worker (api transaction → outbox → relay → BullMQ → worker). One at a time, so this
 * is latency, not throughput. With `workers: 'real'` the worker is the real deployer (started
 * beside the stack by the caller, as `npm start` runs it), and the moment is the one BullMQ
 * records when a worker takes the job (`processedOn`); with the stand-in (the stack's recording
 * worker, `startWorker`), the moment that worker ran.
 */
export async function handoffScenario(
  stack: BenchStack,
  o: BenchOptions,
  workers: 'real' | 'stand-in' = 'stand-in',
): Promise<BenchRow[]> {
  const real = workers === 'real';
  const arrivals: Arrivals = real
    ? await processedOn(stack)
    : { clock: () => performance.now(), handedAt: (id) => stack.handedOver(id) };
  const tag = `${real ? 'r' : 'h'}${randomBytes(2).toString('hex')}`;
  const samples: number[] = [];
  const answered: number[] = [];
  try {
    for (let i = 0; i < o.handoffSamples + 5; i++) {
      const t0 = arrivals.clock();
      const created = await stack.request('POST', '/v2/deployments', stack.createBody(`${tag}-${i}-x`));
      const t1 = arrivals.clock();
      const at = await arrivals.handedAt(created.latest_revision_id);
      if (i < 5) continue; // the first few warm up
      samples.push(at - t0);
      answered.push(t1 - t0);
    }
  } finally {
    await arrivals.close?.();
  }
  const scenario = real ? 'create → handed to the real deployer' : 'create → handed to worker';
  return [
    bounded(scenario, 'p50', percentile(samples, 50), 15, 'ms'),
    { scenario, metric: 'p99', value: percentile(samples, 99), unit: 'ms' },
    // Where the time goes: the create's own answer, and the hand-off after it (relay, Redis, worker).
    { scenario, metric: 'p50 of the create alone', value: percentile(answered, 50), unit: 'ms' },
  ];
}

/** Arrivals at the real deployer: BullMQ's own record (`processedOn`, epoch ms) once the job ended. */
async function processedOn(stack: BenchStack): Promise<Arrivals> {
  const name = 'rollout.revision';
  const queue = new Queue(JOB_QUEUES[name], { connection: stack.redis, prefix: stack.prefix });
  // Its own connection (it blocks reading the events stream); BullMQ leaves a connection it was given open.
  const eventsConnection = stack.redis.duplicate();
  const events = new QueueEvents(JOB_QUEUES[name], { connection: eventsConnection, prefix: stack.prefix });
  await events.waitUntilReady();
  return {
    clock: Date.now,
    handedAt: async (revisionId) => {
      const jobId = JOB_CATALOG[name].jobId({ revisionId, attempt: 0 });
      // Woken by the job's end (or it ended already), then its own record of when a worker took it.
      const ended = new Promise<void>((resolve) => {
        const done = (e: { jobId: string }) => e.jobId === jobId && resolve();
        events.on('completed', done);
        events.on('failed', done);
      });
      try {
        for (const deadline = Date.now() + 60_000; ; ) {
          const job = await queue.getJob(jobId);
          if (job?.finishedOn && job.processedOn) return job.processedOn;
          if (Date.now() > deadline) throw new Error(`the real deployer did not take ${jobId} within 60 s`);
          await Promise.race([ended, new Promise((r) => setTimeout(r, 50))]);
        }
      } finally {
        events.removeAllListeners('completed');
        events.removeAllListeners('failed');
      }
    },
    close: async () => {
      await events.close();
      await queue.close();
      eventsConnection.disconnect();
    },
  };
}
