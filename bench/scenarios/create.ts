import { randomBytes } from 'node:crypto';
import { assertNoFailures, load } from '../support/measure.js';
import { atLeast, atMost, bounded, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/**
 * `POST /v2/deployments` (image deployment, one secret) at 50 connections against the raw
 * express + joi + TypeORM insert with the same body, plus the api's peak RSS under that load.
 */
export async function createScenario(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
  let n = 0;
  const tag = randomBytes(2).toString('hex');
  const body = () => JSON.stringify(stack.createBody(`c${tag}-${n++}-x`));
  const raw = await load({
    url: `${stack.raw.url}/items`,
    method: 'POST',
    body,
    connections: 50,
    durationSec: o.durationSec,
    warmupSec: o.warmupSec,
  });

  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, stack.api.rssMb())), 250);
  const api = await load({
    url: `${stack.api.url}/v2/deployments`,
    method: 'POST',
    headers: { 'x-api-key': stack.key },
    body,
    connections: 50,
    durationSec: o.durationSec,
    warmupSec: o.warmupSec,
  }).finally(() => clearInterval(sampler));
  const single = await load({
    url: `${stack.api.url}/v2/deployments`,
    method: 'POST',
    headers: { 'x-api-key': stack.key },
    body,
    connections: 1,
    durationSec: o.durationSec,
  });
  assertNoFailures(
    { 'create (api)': api, 'create (raw insert)': raw, 'create (1 conn)': single },
    stack.api.problems(),
  );
  return [
    atLeast('create (50 conn)', 'throughput', api.reqPerSec, raw.reqPerSec, 0.25),
    atMost('create (50 conn)', 'p99', api.p99, raw.p99, 3),
    {
      scenario: 'create (50 conn)',
      metric: 'p50',
      value: api.p50,
      unit: 'ms',
      baseline: raw.p50,
      ratio: api.p50 / raw.p50,
    },
    { scenario: 'create (1 conn)', metric: 'throughput', value: single.reqPerSec, unit: 'req/s' },
    { scenario: 'create (1 conn)', metric: 'p50', value: single.p50, unit: 'ms' },
    bounded('create (50 conn)', 'api peak RSS', peakRss, 250, 'MB'),
  ];
}
