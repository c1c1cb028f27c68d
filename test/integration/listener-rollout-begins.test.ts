import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListenerRolloutBegins } from '../../services/deployer/src/placement/listener-begins.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { recordStatements } from '../support/statements.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The deployer begins listener rollouts in batches (issue 38): rollouts whose jobs run at once
 * move AWAITING_DEPLOY → DEPLOYING together, in one statement (`RevisionFlow.beginAll`), not a
 * transaction of five round trips each.
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
    // The first at once, alone; the five that arrived while it was written, together.
    const writes = recording.sent.filter((s) => /UPDATE revisions/.test(s));
    expect(writes, recording.sent.join('\n')).toHaveLength(2);
    expect(recording.sent.filter((s) => /^\s*(BEGIN|START TRANSACTION)/i.test(s))).toEqual([]);
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
    // A second begin of the same revisions finds them moved on.
    expect(await Promise.all(ids.slice(0, 2).map((id) => begins.begin(id)))).toEqual([false, false]);
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
