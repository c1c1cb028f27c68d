import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { TcpProxy } from '../../test/support/tcp-proxy.js';
import { assertNoFailures, load } from '../support/measure.js';
import { atLeast, type BenchRow } from '../support/report.js';
import { deleteKeys, type BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/**
 * A burst of creates absorbed by the outbox, then drained. The api reaches Redis through a TCP
 * proxy that is cut during the burst, so every create commits its outbox row and none is handed
 * over yet (as in a Redis outage or a spike). Once Redis is back, the time until every revision's
 * job has reached a worker is the drain: relays claim outbox rows, enqueue, the worker receives.
 * The baseline is raw single-hop BullMQ: add the same number of no-op jobs and process them.
 */
export async function burstScenario(stack: BenchStack, o: BenchOptions, proxy: TcpProxy): Promise<BenchRow[]> {
  const before = stack.handedCount;
  await proxy.refuse();
  let n = 0;
  const tag = randomBytes(2).toString('hex');
  const created = await load({
    url: `${stack.api.url}/v2/deployments`,
    method: 'POST',
    headers: { 'x-api-key': stack.key },
    body: () => JSON.stringify(stack.createBody(`b${tag}-${n++}-x`)),
    connections: 50,
    durationSec: 0,
    amount: o.burst,
  });
  assertNoFailures({ 'burst: creates': created }, stack.api.problems());
  const t0 = performance.now();
  await proxy.restore();
  const deadline = Date.now() + 300_000;
  while (stack.handedCount - before < o.burst) {
    if (Date.now() > deadline)
      throw new Error(`burst: only ${stack.handedCount - before} of ${o.burst} handed over after 5 min`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const drainMs = performance.now() - t0;
  // How much of the drain is waiting for the producer connection to come back, not relaying.
  const firstMs = stack.handedAt(before)! - t0;
  const rawMs = await rawBullmq(stack, o.burst);
  return [
    { scenario: `burst of ${o.burst} creates`, metric: 'creates', value: created.reqPerSec, unit: 'req/s' },
    { scenario: `burst of ${o.burst} creates`, metric: 'first job after restore', value: firstMs, unit: 'ms' },
    atLeast(
      `burst of ${o.burst} creates`,
      'drain rate',
      (o.burst / drainMs) * 1000,
      (o.burst / rawMs) * 1000,
      0.5,
      'jobs/s',
    ),
  ];
}

/** Milliseconds to add `count` no-op jobs (50 adds in flight) and have a worker process them all. */
async function rawBullmq(stack: BenchStack, count: number): Promise<number> {
  const prefix = `${stack.prefix}_raw`;
  const queue = new Queue('raw', { connection: stack.redis, prefix });
  let done = 0;
  let finished!: () => void;
  const all = new Promise<void>((r) => (finished = r));
  const worker = new Worker('raw', async () => void (++done === count && finished()), {
    connection: stack.redis,
    prefix,
    concurrency: 50,
  });
  await worker.waitUntilReady();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < count) await queue.add('noop', { i: next++ }, { removeOnComplete: true });
    }),
  );
  await all;
  const ms = performance.now() - t0;
  await worker.close();
  await queue.close();
  await deleteKeys(stack.redis, `${prefix}:*`);
  return ms;
}
