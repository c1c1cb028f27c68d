import { randomBytes } from 'node:crypto';
import { percentile } from '../support/measure.js';
import { bounded, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/**
 * Sequential creates: from sending `POST /v2/deployments` until the revision's rollout job
 * reaches a worker (api transaction → outbox → relay → BullMQ → worker). One at a time, so this
 * is latency, not throughput.
 */
export async function handoffScenario(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
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
