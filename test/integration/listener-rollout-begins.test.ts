import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GLANCE, ListenerPoll, type ListenerGlance } from '../../services/api/src/reads/listener-poll.js';
import { ListenerRolloutBegins } from '../../services/deployer/src/placement/listener-begins.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { recordStatements } from '../support/statements.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The deployer begins listener rollouts in batches (issue 38): rollouts whose jobs run at once
 * move AWAITING_DEPLOY → DEPLOYING together, in one statement (`RevisionFlow.beginAll`), not a
 * transaction of five round trips each. A listener's deployment is created AWAITING_DATABASE with
 * its database name recorded and becomes READY as its first rollout begins: the batch's
 * deployments move together, in one statement of the same transaction.
 */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'begins');
});
afterAll(async () => {
  await api?.close();
});

let n = 0;
async function awaitingDeploy(count: number): Promise<Array<{ id: string; revisionId: string }>> {
  const made: Array<{ id: string; revisionId: string }> = [];
  for (let i = 0; i < count; i++) {
    const d = await createImageDeployment(api, `begins-${++n}`, listenerId);
    made.push({ id: d.id, revisionId: d.latest_revision_id });
  }
  await api.relay.drain();
  return made;
}

const rows = async (ids: string[]) =>
  api.dataSource.query(
    `SELECT status, status_message, heartbeat_at, attempt FROM revisions WHERE id = ANY($1::uuid[]) ORDER BY id`,
    [ids],
  );

describe('ListenerRolloutBegins', () => {
  it('begins the rollouts that arrive together in one statement; one no longer waiting is not begun', async () => {
    const made = await awaitingDeploy(6);
    const ids = made.map((m) => m.revisionId);
    // The last one was deleted meanwhile: its revision is INTERRUPTED.
    expect((await api.http.delete(`/v2/deployments/${made[5]!.id}`)).status).toBe(204);
    const begins = new ListenerRolloutBegins(api.dataSource, api.flow);
    const recording = recordStatements();
    let begun: boolean[];
    try {
      begun = await Promise.all(ids.map((id) => begins.begin(id)));
    } finally {
      recording.stop();
    }
    expect(begun).toEqual([true, true, true, true, true, false]);
    // The first at once, alone; the five that arrived while it was written, together: each batch
    // one transaction of two statements, its deployments' move then its revisions'.
    const writes = recording.sent.filter((s) => /UPDATE revisions/.test(s));
    expect(writes, recording.sent.join('\n')).toHaveLength(2);
    expect(recording.sent.filter((s) => /UPDATE deployments/.test(s))).toHaveLength(2);
    expect(recording.sent.filter((s) => /^\s*(BEGIN|START TRANSACTION)/i.test(s))).toHaveLength(2);
    expect(await rows(ids.slice(0, 5))).toEqual(
      Array(5).fill({
        status: 'DEPLOYING',
        status_message: 'Published to the listener; waiting for its report.',
        heartbeat_at: null,
        attempt: 0,
      }),
    );
    expect((await rows([ids[5]!]))[0].status).toBe('INTERRUPTED');
    // Each move is recorded, as any status change is.
    const moves = await api.dataSource.query(
      `SELECT count(*)::int AS n FROM revision_events WHERE revision_id = ANY($1::uuid[]) AND to_status = 'DEPLOYING'`,
      [ids],
    );
    expect(moves).toEqual([{ n: 5 }]);
    // Their deployments, created AWAITING_DATABASE, are READY, each with its one event of the move;
    // the deleted one's is left being deleted.
    const deployments = made.map((m) => m.id);
    const statuses = await api.dataSource.query(`SELECT id, status FROM deployments WHERE id = ANY($1::uuid[])`, [
      deployments,
    ]);
    expect(Object.fromEntries(statuses.map((r: { id: string; status: string }) => [r.id, r.status]))).toEqual(
      Object.fromEntries(deployments.map((id, i) => [id, i < 5 ? 'READY' : 'AWAITING_DELETE'])),
    );
    const events = await api.dataSource.query(
      `SELECT deployment_id, type, data FROM events
        WHERE deployment_id = ANY($1::uuid[]) AND type LIKE 'deployment.%' ORDER BY deployment_id, uid`,
      [deployments.slice(0, 5)],
    );
    const names = new Map(made.map((m, i) => [m.id, `begins-${n - made.length + i + 1}`]));
    expect(events).toEqual(
      [...deployments.slice(0, 5)].sort().flatMap((id) => [
        { deployment_id: id, type: 'deployment.created', data: { name: names.get(id), status: 'AWAITING_DATABASE' } },
        { deployment_id: id, type: 'deployment.status_changed', data: { from: 'AWAITING_DATABASE', to: 'READY' } },
      ]),
    );
    // A second begin of the same revisions finds them moved on, and moves no deployment again.
    expect(await Promise.all(ids.slice(0, 2).map((id) => begins.begin(id)))).toEqual([false, false]);
    const again = await api.dataSource.query(
      `SELECT count(*)::int AS n FROM events WHERE deployment_id = ANY($1::uuid[]) AND type = 'deployment.status_changed'`,
      [deployments.slice(0, 5)],
    );
    expect(again).toEqual([{ n: 5 }]);
  });

  it('a deployment created before creates recorded its name waits for its provision.deployment', async () => {
    const [old] = await awaitingDeploy(1);
    // As created before: no name recorded, its provision.deployment job still pending.
    await api.dataSource.query(`UPDATE deployments SET database_name = NULL WHERE id = $1`, [old!.id]);
    const begins = new ListenerRolloutBegins(api.dataSource, api.flow);
    expect(await begins.begin(old!.revisionId)).toBe(true);
    const [row] = await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [old!.id]);
    expect(row).toEqual({ status: 'AWAITING_DATABASE' });
  });

  it('a batch that fails is written again one by one: only the bad row fails its job', async () => {
    const made = await awaitingDeploy(3);
    const begins = new ListenerRolloutBegins(api.dataSource, api.flow);
    const first = begins.begin(made[0]!.revisionId);
    // Arriving while the first is written: one batch, which a malformed id makes fail.
    const rest = [begins.begin('not-a-uuid'), begins.begin(made[1]!.revisionId), begins.begin(made[2]!.revisionId)];
    expect(await first).toBe(true);
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(settled.slice(1).map((s) => (s as PromiseFulfilledResult<boolean>).value)).toEqual([true, true]);
    expect((await rows(made.map((m) => m.revisionId))).map((r: { status: string }) => r.status)).toEqual([
      'DEPLOYING',
      'DEPLOYING',
      'DEPLOYING',
    ]);
  });
});

/** The rows a plan node and its children read from `relation`, over all their loops. */
function rowsRead(node: Record<string, any>, relation: string): number {
  const own = node['Relation Name'] === relation ? node['Actual Rows'] * node['Actual Loops'] : 0;
  return own + ((node.Plans ?? []) as Array<Record<string, any>>).reduce((sum, p) => sum + rowsRead(p, relation), 0);
}

describe("a listener agent's poll", () => {
  it('reads its own rollouts in flight only, however many other listeners have', async () => {
    // Rollouts carry their deployment's listener (a trigger on insert): a poll found them by
    // joining every revision DEPLOYING in the installation to its listener's deployments.
    const busy = await createListener(api, 'busy-elsewhere');
    const polling = await createListener(api, 'polling');
    const begins = new ListenerRolloutBegins(api.dataSource, api.flow);
    const elsewhere: string[] = [];
    for (let i = 0; i < 40; i++)
      elsewhere.push((await createImageDeployment(api, `elsewhere-${i}`, busy)).latest_revision_id);
    const own = await createImageDeployment(api, 'own-rollout', polling);
    await api.relay.drain();
    expect(await Promise.all([...elsewhere, own.latest_revision_id].map((id) => begins.begin(id)))).not.toContain(
      false,
    );

    const [{ carried }] = await api.dataSource.query(
      `SELECT count(*)::int AS carried FROM revisions WHERE listener_id = $1 AND status = 'DEPLOYING'`,
      [busy],
    );
    expect(carried).toBe(40);
    // A table this small is read whole (a sequential scan is cheaper): the plan that matters is the
    // one a large installation gets, with its indexes.
    const plan = await api.dataSource.transaction(async (m) => {
      await m.query('SET LOCAL enable_seqscan = off');
      const [row] = await m.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${GLANCE}`, [polling, api.workspaceId]);
      return row['QUERY PLAN'];
    });
    // Its own rollout (read twice: to find the deployments with work, then to render them).
    expect(rowsRead(plan[0].Plan, 'revisions')).toBeLessThanOrEqual(4);
    expect(rowsRead(plan[0].Plan, 'revisions')).toBeGreaterThan(0);
  });

  it('keeps a statement of its own for the first listeners only: a connection holds a bounded number', async () => {
    const listeners: string[] = [];
    for (const name of ['own-a', 'own-b', 'own-c', 'own-d']) listeners.push(await createListener(api, name));
    // One connection (a transaction's), so its prepared statements are the ones counted.
    const { glances, held } = await api.dataSource.transaction(async (m) => {
      const poll = new ListenerPoll(m, 2);
      const glances: Array<ListenerGlance | null> = [];
      // Each twice: a listener past the cap is read as well, every time.
      for (const id of [...listeners, ...listeners]) glances.push(await poll.glance(api.workspaceId, id));
      const [{ n }] = await m.query(
        `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%WITH seen AS%'`,
      );
      return { glances, held: n as number };
    });
    expect(glances).toHaveLength(8);
    for (const g of glances) expect(g).toEqual({ fingerprint: expect.any(String), unknown: false });
    // The same listener reads the same either way.
    expect(glances.slice(4)).toEqual(glances.slice(0, 4));
    expect(held).toBe(2);
  });
});
