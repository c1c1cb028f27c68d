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
  for (let i = 0; i < o.handoffSamples + 5; i++) {
    const t0 = performance.now();
    const created = await stack.request('POST', '/v2/deployments', stack.createBody(`h${tag}-${i}-x`));
    const at = await stack.handedOver(created.latest_revision_id);
    if (i >= 5) samples.push(at - t0); // the first few warm up
  }
  return [
    bounded('create → handed to worker', 'p50', percentile(samples, 50), 15, 'ms'),
    { scenario: 'create → handed to worker', metric: 'p99', value: percentile(samples, 99), unit: 'ms' },
  ];
}
