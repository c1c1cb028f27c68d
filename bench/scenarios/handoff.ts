import { randomBytes } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { JOB_CATALOG, JOB_QUEUES } from '@slipway/jobs';
import { percentile } from '../support/measure.js';
import { bounded, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

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
  if (workers === 'real') return realHandoff(stack, o);
  const tag = randomBytes(2).toString('hex');
  const samples: number[] = [];
  const answered: number[] = [];
  for (let i = 0; i < o.handoffSamples + 5; i++) {
    const t0 = performance.now();
    const created = await stack.request('POST', '/v2/deployments', stack.createBody(`h${tag}-${i}-x`));
    const t1 = performance.now();
    const at = await stack.handedOver(created.latest_revision_id);
    if (i < 5) continue; // the first few warm up
    samples.push(at - t0);
    answered.push(t1 - t0);
  }
  return [
    bounded('create → handed to worker', 'p50', percentile(samples, 50), 15, 'ms'),
    { scenario: 'create → handed to worker', metric: 'p99', value: percentile(samples, 99), unit: 'ms' },
    // Where the time goes: the create's own answer, and the hand-off after it (relay, Redis, worker).
    {
      scenario: 'create → handed to worker',
      metric: 'p50 of the create alone',
      value: percentile(answered, 50),
      unit: 'ms',
    },
  ];
}

/** The same sequential creates with the real deployer taking their rollouts: see handoffScenario. */
async function realHandoff(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
  const name = 'rollout.revision';
  const spec = JOB_CATALOG[name];
  const options = { connection: stack.redis, prefix: stack.prefix };
  const queue = new Queue(JOB_QUEUES[name], options);
  // Its own connection (it blocks reading the events stream); BullMQ leaves a connection it was given open.
  const eventsConnection = stack.redis.duplicate();
  const events = new QueueEvents(JOB_QUEUES[name], { connection: eventsConnection, prefix: stack.prefix });
  await events.waitUntilReady();
  const tag = randomBytes(2).toString('hex');
  const samples: number[] = [];
  const answered: number[] = [];
  try {
    for (let i = 0; i < o.handoffSamples + 5; i++) {
      const t0 = Date.now();
      const created = await stack.request('POST', '/v2/deployments', stack.createBody(`r${tag}-${i}-x`));
      const t1 = Date.now();
      const jobId = spec.jobId({ revisionId: created.latest_revision_id, attempt: 0 });
      // Woken by the job's end (or it ended already), then its own record of when a worker took it.
      const ended = new Promise<void>((resolve) => {
        const done = (e: { jobId: string }) => e.jobId === jobId && resolve();
        events.on('completed', done);
        events.on('failed', done);
      });
      let processedOn: number | undefined;
      for (const deadline = Date.now() + 60_000; processedOn === undefined; ) {
        const job = await queue.getJob(jobId);
        if (job?.finishedOn) processedOn = job.processedOn;
        else if (Date.now() > deadline) throw new Error(`the real deployer did not take ${jobId} within 60 s`);
        else await Promise.race([ended, new Promise((r) => setTimeout(r, 50))]);
      }
      events.removeAllListeners('completed');
      events.removeAllListeners('failed');
      if (i < 5) continue;
      samples.push(processedOn! - t0);
      answered.push(t1 - t0);
    }
  } finally {
    await events.close();
    await queue.close();
    eventsConnection.disconnect();
  }
  const scenario = 'create → handed to the real deployer';
  return [
    bounded(scenario, 'p50', percentile(samples, 50), 15, 'ms'),
    { scenario, metric: 'p99', value: percentile(samples, 99), unit: 'ms' },
    { scenario, metric: 'p50 of the create alone', value: percentile(answered, 50), unit: 'ms' },
  ];
}
