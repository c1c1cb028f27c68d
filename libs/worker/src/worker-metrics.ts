import type { Job, Worker } from 'bullmq';
import { collectProcessMetrics } from '@slipway/logging';
import { Counter, Histogram, Registry } from 'prom-client';

const DURATION_BUCKETS = [0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800];

/**
 * A worker process's own Prometheus metrics: jobs finished per queue, job name and outcome, and
 * how long they ran (BullMQ's processedOn → finishedOn), plus the Node process defaults. Served
 * at `/metrics` on the worker's health port. Parked jobs (moved back to delayed, waiting for the
 * runtime owner) neither complete nor fail, so they are not counted.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly finished: Counter<'queue' | 'job' | 'outcome'>;
  private readonly duration: Histogram<'queue' | 'job' | 'outcome'>;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectProcessMetrics(this.registry);
    this.finished = new Counter({
      name: 'slipway_worker_jobs_total',
      help: 'Jobs this worker process finished, by queue, job name and outcome (completed, failed).',
      labelNames: ['queue', 'job', 'outcome'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'slipway_worker_job_duration_seconds',
      help: 'How long jobs ran in this worker process, by queue, job name and outcome.',
      labelNames: ['queue', 'job', 'outcome'],
      buckets: DURATION_BUCKETS,
      registers: [this.registry],
    });
  }

  /**
   * A counter of this process's own (e.g. the deployer's runtime events), registered beside the
   * job metrics so `/metrics` serves it too.
   */
  counter<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
  ): { inc(labels: Record<L, string>): void } {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** Counts every job the worker completes or fails from now on. */
  observe(worker: Worker): void {
    const record = (job: Job | undefined, outcome: 'completed' | 'failed') => {
      if (!job) return;
      const labels = { queue: worker.name, job: job.name, outcome };
      this.finished.inc(labels);
      if (job.processedOn)
        this.duration.observe(labels, Math.max(0, (job.finishedOn ?? Date.now()) - job.processedOn) / 1000);
    };
    worker.on('completed', (job) => record(job, 'completed'));
    worker.on('failed', (job) => record(job, 'failed'));
  }
}
