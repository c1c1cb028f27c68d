import { randomBytes } from 'node:crypto';
import { assertNoFailures, load, percentile } from '../support/measure.js';
import { atLeast, atMost, bounded, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/** Who consumes the creates' jobs meanwhile: the bench's stand-in (nothing), or the real builder and deployer. */
export type CreateWorkers = 'stand-in' | 'real';

/**
 * `POST /v2/deployments` (image deployment on a listener, one secret) at 50 connections against
 * the raw express + joi + TypeORM insert with the same body, plus the api's peak RSS under that
 * load. With `real` workers (the builder and deployer as `npm start` runs them, started by the
 * caller), every create's jobs are consumed as users see them: the deployer starts each rollout
 * (on a listener: the revision moves to DEPLOYING, begun in batches, and the deployment, created
 * AWAITING_DATABASE with its database name and no provisioning job, moves to READY in the same
 * transaction) while the load runs, and the
 * hand-off under load is read back from the database (revision insert → DEPLOYING).
 */
export async function createScenario(
  stack: BenchStack,
  o: BenchOptions,
  workers: CreateWorkers = 'stand-in',
): Promise<BenchRow[]> {
  const scenario = workers === 'real' ? 'create, real workers (50 conn)' : 'create (50 conn)';
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
  assertNoFailures({ [`${scenario} (api)`]: api, 'create (raw insert)': raw }, stack.api.problems());
  const rows: BenchRow[] = [
    atLeast(scenario, 'throughput', api.reqPerSec, raw.reqPerSec, 0.25),
    atMost(scenario, 'p99', api.p99, raw.p99, 3),
    { scenario, metric: 'p50', value: api.p50, unit: 'ms', baseline: raw.p50, ratio: api.p50 / raw.p50 },
  ];
  if (workers === 'real') return [...rows, ...(await handOffUnderLoad(stack, `c${tag}-`))];
  const single = await load({
    url: `${stack.api.url}/v2/deployments`,
    method: 'POST',
    headers: { 'x-api-key': stack.key },
    body,
    connections: 1,
    durationSec: o.durationSec,
  });
  assertNoFailures({ 'create (1 conn)': single }, stack.api.problems());
  return [
    ...rows,
    { scenario: 'create (1 conn)', metric: 'throughput', value: single.reqPerSec, unit: 'req/s' },
    { scenario: 'create (1 conn)', metric: 'p50', value: single.p50, unit: 'ms' },
    bounded(scenario, 'api peak RSS', peakRss, 250, 'MB'),
  ];
}

/**
 * For the creates named `<prefix>…`: from the revision's insert to the real deployer taking its
 * rollout (DEPLOYING), both on the database's clock, after the deployer has had 30 s to catch up.
 * What did not reach DEPLOYING by then is reported, not hidden.
 */
async function handOffUnderLoad(stack: BenchStack, prefix: string): Promise<BenchRow[]> {
  const sql = `SELECT extract(epoch FROM e.created_at - r.created_at) * 1000 AS ms
       FROM deployments d JOIN revisions r ON r.deployment_id = d.id
       LEFT JOIN revision_events e ON e.revision_id = r.id AND e.to_status = 'DEPLOYING'
      WHERE d.name LIKE $1`;
  let rows: Array<{ ms: number | null }> = [];
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    rows = await stack.dataSource.query(sql, [`${prefix}%`]);
    if (rows.every((r) => r.ms !== null)) break;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  const samples = rows.filter((r) => r.ms !== null).map((r) => Number(r.ms));
  if (samples.length < rows.length) {
    const where = await stack.dataSource.query(
      `SELECT r.status, d.status AS deployment_status, count(*)::int AS n FROM deployments d
         JOIN revisions r ON r.deployment_id = d.id WHERE d.name LIKE $1 GROUP BY 1, 2 ORDER BY 3 DESC`,
      [`${prefix}%`],
    );
    console.log(`[create, real workers] where the creates are after 30 s: ${JSON.stringify(where)}`);
  }
  const scenario = 'create → rollout begun, real deployer, under the 50-conn load';
  const latencies: BenchRow[] = samples.length
    ? [
        { scenario, metric: 'p50', value: percentile(samples, 50), unit: 'ms' },
        { scenario, metric: 'p99', value: percentile(samples, 99), unit: 'ms' },
      ]
    : [];
  return [
    ...latencies,
    { scenario, metric: 'not begun after 30 s', value: rows.length - samples.length, unit: 'creates' },
  ];
}
