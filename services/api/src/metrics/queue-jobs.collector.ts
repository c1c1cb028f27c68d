import { Gauge, type Registry } from 'prom-client';
import type { JobType, Queue } from 'bullmq';
import type { Queues } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';

/** The job states BullMQ counts, in its own names. */
const COUNTED_STATES = [
  'waiting',
  'active',
  'delayed',
  'completed',
  'failed',
  'prioritized',
  'waiting-children',
] as const satisfies readonly JobType[];

/**
 * The states reported per queue. BullMQ 6 has no `paused` list any more (a paused queue keeps
 * its jobs in `waiting`); `paused` is kept as BullMQ 5 and dashboards meant it: while a queue is
 * paused its waiting jobs are reported as `paused` (and `waiting` is 0), so the states still add
 * up to the queue's jobs and a stuck queue says why.
 */
export const QUEUE_JOB_STATES = [...COUNTED_STATES, 'paused'] as const;
type State = (typeof QUEUE_JOB_STATES)[number];

/** A scrape must answer even when Redis hangs rather than refusing connections. */
const COUNT_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface QueueJobsCollectorOptions {
  timeoutMs?: number;
}

/**
 * `slipway_queue_jobs{queue,state}` and `slipway_queue_up{queue}`, read from Redis at scrape
 * time with `getJobCounts()`. A queue whose counts cannot be read reports `up` 0 and no job
 * samples (a stale or zero count would look like an empty queue), and the scrape still succeeds.
 */
export class QueueJobsCollector {
  private readonly jobs: Gauge<'queue' | 'state'>;
  private readonly up: Gauge<'queue'>;
  private readonly timeoutMs: number;
  /** Queues last seen down, so an outage is logged once, not at every scrape. */
  private readonly down = new Set<string>();

  constructor(
    registry: Registry,
    private readonly queues: Queues,
    private readonly log: Logger,
    options: QueueJobsCollectorOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? COUNT_TIMEOUT_MS;
    this.jobs = new Gauge({
      name: 'slipway_queue_jobs',
      help: 'Jobs in each BullMQ queue by state, read at scrape time.',
      labelNames: ['queue', 'state'],
      registers: [registry],
    });
    this.up = new Gauge({
      name: 'slipway_queue_up',
      help: '1 when the queue counts could be read from Redis at this scrape, else 0.',
      labelNames: ['queue'],
      registers: [registry],
    });
  }

  async collect(): Promise<void> {
    const entries = Object.values(this.queues);
    const results = await Promise.allSettled(entries.map((queue) => withTimeout(this.countsOf(queue), this.timeoutMs)));
    // Reset only once every answer is in, so a concurrent scrape never sees half a picture.
    this.jobs.reset();
    results.forEach((result, i) => {
      const queue = entries[i]!.name;
      if (result.status === 'rejected') {
        this.up.set({ queue }, 0);
        if (!this.down.has(queue))
          this.log.warn({ err: result.reason, queue }, 'could not read queue counts for /metrics');
        this.down.add(queue);
        return;
      }
      this.down.delete(queue);
      this.up.set({ queue }, 1);
      for (const state of QUEUE_JOB_STATES) this.jobs.set({ queue, state }, result.value[state]);
    });
  }

  private async countsOf(queue: Queue): Promise<Record<State, number>> {
    const [counts, paused] = await Promise.all([queue.getJobCounts(...COUNTED_STATES), queue.isPaused()]);
    const of = (state: (typeof COUNTED_STATES)[number]) => counts[state] ?? 0;
    return {
      waiting: paused ? 0 : of('waiting'),
      active: of('active'),
      delayed: of('delayed'),
      completed: of('completed'),
      failed: of('failed'),
      prioritized: of('prioritized'),
      'waiting-children': of('waiting-children'),
      paused: paused ? of('waiting') : 0,
    };
  }
}
