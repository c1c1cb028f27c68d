import { loadConfig } from '@slipway/config';
import { RevisionFlow } from '@slipway/pipeline';
import { assertNoFailures, load, type LoadResult } from '../support/measure.js';
import { atLeast, atMost, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/**
 * The read paths clients poll (CLIs poll revisions, listener agents poll desired state), each at
 * 50 connections against the raw express + TypeORM primary-key select.
 */
export async function readsScenario(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
  // The create scenario just added thousands of rows: statistics as autovacuum would have them a
  // minute later, not the empty tables' (plans for 5 rows, scanning thousands).
  await stack.dataSource.query('ANALYZE deployments, revisions');
  // A few deployments mid-rollout, so desired state renders real entries (manifests, secrets). On
  // a listener of their own: the create scenario's thousands of rollouts, begun by the real
  // deployer, are in flight on the bench's listener, whose desired state lists them all.
  const listenerId = await stack.addListener('reads');
  const deployments = [];
  for (let i = 0; i < 5; i++)
    deployments.push(
      await stack.request('POST', '/v2/deployments', stack.createBody(`read-${stack.id}-${i}`, listenerId)),
    );
  await startRollouts(stack, deployments);
  // A full list page, whatever ran before (alone, the reads find only the 5 above): the rest stay
  // queued for a rollout no deployer takes, so desired state keeps its 5 entries.
  const [{ count }] = await stack.dataSource.query('SELECT count(*)::int AS count FROM deployments');
  for (let i = count; i < 20; i++)
    await stack.request('POST', '/v2/deployments', stack.createBody(`read-${stack.id}-page-${i}`));
  const agent = await stack.request('POST', '/v2/api-keys', {
    description: 'bench agent',
    role: 'member',
    listener_id: listenerId,
  });
  const [item] = await stack.dataSource.query(
    `INSERT INTO raw_items (name, image_uri, secrets) VALUES ('x', 'y', '[]') RETURNING id`,
  );

  // Agents send back the ETag of the state they hold (services/listener-agent): unchanged → 304.
  const desiredUrl = `${stack.api.url}/v2/listeners/${listenerId}/desired-state`;
  const etag = (await fetch(desiredUrl, { headers: { 'x-api-key': agent.key } })).headers.get('etag');
  if (!etag) throw new Error('desired-state answered without an ETag');

  const d = deployments[0];
  const measure = (path: string, key = stack.key, headers: Record<string, string> = {}): Promise<LoadResult> =>
    load({
      url: stack.api.url + path,
      headers: { 'x-api-key': key, ...headers },
      connections: 50,
      durationSec: o.durationSec,
      warmupSec: o.warmupSec,
    });
  // The baseline is measured right before each case, not once for all: what ran before this
  // scenario (the create rounds' thousands of rollouts and their jobs) keeps the machine busy for
  // a while and differently from one minute to the next, and a case measured a minute after its
  // baseline compared against another machine.
  const rawLoad = () =>
    load({
      url: `${stack.raw.url}/items/${item.id}`,
      connections: 50,
      durationSec: o.durationSec,
      warmupSec: o.warmupSec,
    });
  const cases: Array<[string, () => Promise<LoadResult>]> = [
    ['GET deployment', () => measure(`/v2/deployments/${d.id}`)],
    ['GET revision', () => measure(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`)],
    ['list deployments (20)', () => measure('/v2/deployments?limit=20')],
    [
      'desired-state (5 entries, unchanged: 304)',
      () => measure(`/v2/listeners/${listenerId}/desired-state`, agent.key, { 'if-none-match': etag }),
    ],
    [
      'desired-state (5 entries, full 56 KB body)',
      () => measure(`/v2/listeners/${listenerId}/desired-state`, agent.key),
    ],
  ];
  const rows: BenchRow[] = [];
  for (const [name, run] of cases) {
    const raw = await rawLoad();
    const r = await run();
    assertNoFailures({ [name]: r }, stack.api.problems());
    rows.push(atLeast(name, 'throughput', r.reqPerSec, raw.reqPerSec, 0.5), atMost(name, 'p99', r.p99, raw.p99, 2));
  }
  return rows;
}

/**
 * Starts each deployment's rollout as the deployer does for a listener's deployment: once the
 * relay handed the revision to the rollout queue (AWAITING_DEPLOY), it moves it to DEPLOYING and
 * leaves it to the agent (a deployer of this stack that took the job already did the same).
 */
async function startRollouts(
  stack: BenchStack,
  deployments: Array<{ id: string; latest_revision_id: string }>,
): Promise<void> {
  const flow = new RevisionFlow(loadConfig(stack.serviceEnv).pipeline);
  for (const d of deployments) {
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
      const { status } = await stack.request('GET', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`);
      if (status === 'DEPLOYING') break;
      if (
        status === 'AWAITING_DEPLOY' &&
        (await stack.dataSource.transaction((m) =>
          flow.transition(m, d.latest_revision_id, 'DEPLOYING', { from: ['AWAITING_DEPLOY'] }),
        ))
      )
        break;
      if (Date.now() > deadline)
        throw new Error(`revision ${d.latest_revision_id} is still ${status}, not handed to the rollout queue`);
    }
  }
}
