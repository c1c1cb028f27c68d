import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SLOT_LOW_WATER, SLOT_SLICE } from '@slipway/db';
import { eventually } from '../support/service-process.js';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The deployment quota as slots (libs/db/src/repositories/deployment-slots.repository.ts):
 * concurrent creates of one workspace each claim a free slot row with SKIP LOCKED instead of
 * queuing on the workspace's lock, never going over the quota, whatever changes the quota or
 * deletes deployments meanwhile. test/integration/quotas.test.ts covers the quota's answers.
 *
 * The overlap is shown without timing anything: the api runs in this process, and a hook on the
 * pg client holds each create's COMMIT, once its slot is claimed, until GROUP creates hold a
 * claimed slot uncommitted at once. With the workspace lock of before, a second create could
 * not get past the quota check while the first had not committed: no group would ever form
 * (the hook lets a COMMIT go after 20 s without one, and the test fails counting the groups).
 */

let api: TestApi;
let orgAdmin: HttpClient;
const GROUP = 4; // the test api's pool has 5 connections: 4 held, 1 for everything else
const original = pg.Client.prototype.query;
/** Clients whose transaction claimed a slot and has not committed; the COMMITs waiting for their group. */
const claimed = new Set<pg.Client>();
let waiting: Array<() => void> = [];
let holding = false;
/** Held creates still to commit: the last group may be smaller. */
let toCommit = 0;
const groups: number[] = [];
/** ROLLBACKs sent: a create that finds no free slot rolls back and runs again. */
let rollbacks = 0;

function releaseIfGrouped(force = false) {
  if (!waiting.length || (!force && waiting.length < Math.min(GROUP, toCommit))) return;
  groups.push(waiting.length);
  toCommit -= waiting.length;
  const go = waiting;
  waiting = [];
  for (const resume of go) resume();
}

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_QUOTA_DEPLOYMENTS: '100' });
  orgAdmin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string };
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    const send = () => (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    if (holding && /^COMMIT/i.test(text) && claimed.has(this)) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => releaseIfGrouped(true), 20_000);
        waiting.push(() => (clearTimeout(timer), claimed.delete(this), send().then(resolve, reject)));
        releaseIfGrouped();
      });
    }
    if (/^ROLLBACK/i.test(text)) {
      rollbacks++;
      claimed.delete(this);
    }
    const result = send();
    if (holding && /UPDATE deployment_slots/.test(text))
      void result.then(
        () => claimed.add(this),
        () => undefined,
      );
    return result;
  } as typeof original;
});
afterEach(() => {
  holding = false;
  releaseIfGrouped(true);
});
afterAll(async () => {
  pg.Client.prototype.query = original;
  await api?.close();
});

async function workspace(quotas: Record<string, number> = {}) {
  const ws = await otherWorkspaceClient(api, `slots-${randomUUID().slice(0, 8)}`);
  if (Object.keys(quotas).length)
    expect((await orgAdmin.put(`/v2/workspaces/${ws.workspaceId}/quotas`, quotas)).status).toBe(200);
  return ws;
}

const create = (client: HttpClient) =>
  client.post('/v2/deployments', {
    name: `s-${randomUUID().slice(0, 8)}`,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });

const count = async (sql: string, params: unknown[]) => Number((await api.dataSource.query(sql, params))[0].n);
const deployments = (workspaceId: string) =>
  count(`SELECT count(*) AS n FROM deployments WHERE workspace_id = $1`, [workspaceId]);
const takenSlots = (workspaceId: string) =>
  count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1 AND deployment_id IS NOT NULL`, [
    workspaceId,
  ]);

describe('concurrent creates of one workspace', () => {
  it('50 creates hold their slots uncommitted together, in groups, instead of one after another', async () => {
    const { workspaceId, client } = await workspace();
    // The workspace's first create lays its slots out (under the workspace lock, once).
    expect((await create(client)).status).toBe(201);
    groups.length = 0;
    toCommit = 50;
    holding = true;
    const statuses = (await Promise.all(Array.from({ length: 50 }, () => create(client)))).map((r) => r.status);
    expect(statuses).toEqual(Array(50).fill(201));
    // 48 of the 50 committed in groups of GROUP transactions holding a claimed slot at once, the last 2 together.
    expect(groups, JSON.stringify(groups)).toEqual([...Array(12).fill(GROUP), 2]);
    expect(await deployments(workspaceId)).toBe(51);
    expect(await takenSlots(workspaceId)).toBe(51);
  }, 120_000);

  it('50 creates racing for 20 slots: exactly 20 win, the others are refused with nothing written', async () => {
    const { workspaceId, client } = await workspace({ deployments: 20 });
    const statuses = (await Promise.all(Array.from({ length: 50 }, () => create(client)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBe(20);
    expect(statuses.filter((s) => s !== 201)).toEqual(Array(30).fill(403));
    expect(await deployments(workspaceId)).toBe(20);
    expect(await takenSlots(workspaceId)).toBe(20);
  }, 120_000);
});

describe('quota changes and deletes', () => {
  it('a lowered quota refuses creates until deletes bring the workspace below it; a raised one lays out more slots', async () => {
    const { workspaceId, client } = await workspace({ deployments: 4 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await create(client)).body.id);
    expect((await create(client)).status).toBe(403);

    await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: 2 });
    // A deployment goes as a teardown removes it: its slot goes with the row.
    await api.dataSource.query(`DELETE FROM deployments WHERE id = $1`, [ids[0]]);
    expect(await takenSlots(workspaceId)).toBe(3);
    expect((await create(client)).status).toBe(403); // 3 deployments, quota 2
    await api.dataSource.query(`DELETE FROM deployments WHERE id = ANY($1)`, [ids.slice(1, 3)]);
    expect((await create(client)).status).toBe(201); // 1 deployment, quota 2
    expect((await create(client)).status).toBe(403);
    expect(await deployments(workspaceId)).toBe(2);

    await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: 5 });
    const more = await Promise.all(Array.from({ length: 5 }, () => create(client)));
    expect(more.map((r) => r.status).sort()).toEqual([201, 201, 201, 403, 403]);
    expect(await deployments(workspaceId)).toBe(5);
    // Laid out for 5: every slot taken, none spare.
    expect(await count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1`, [workspaceId])).toBe(5);
  }, 60_000);

  it('a large quota is laid out a slice at a time, the next slice once the first is taken', async () => {
    const { workspaceId, client } = await workspace({ deployments: 1_000_000 });
    expect((await create(client)).status).toBe(201);
    const slots = () => count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1`, [workspaceId]);
    expect(await slots()).toBe(SLOT_SLICE);
    // The slice used up (its free rows gone), one more create lays out the next one.
    await api.dataSource.query(`DELETE FROM deployment_slots WHERE workspace_id = $1 AND deployment_id IS NULL`, [
      workspaceId,
    ]);
    expect((await create(client)).status).toBe(201);
    expect(await slots()).toBe(1 + SLOT_SLICE);
  }, 60_000);

  it('a create that sees the free slots run low has the next slice added after it: no later create finds none', async () => {
    const { workspaceId, client } = await workspace({ deployments: 1_000_000 });
    expect((await create(client)).status).toBe(201); // lays out the first slice
    const free = () =>
      count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1 AND deployment_id IS NULL`, [
        workspaceId,
      ]);
    expect(await free()).toBe(SLOT_SLICE - 1);
    const before = rollbacks;
    // A whole slice more, 8 at a time: past SLOT_LOW_WATER free, top-ups add rows as they go.
    for (let i = 0; i < SLOT_SLICE; i += 8) {
      expect((await Promise.all(Array.from({ length: 8 }, () => create(client)))).map((r) => r.status)).toEqual(
        Array(8).fill(201),
      );
    }
    // 257 slots taken out of a first slice of 256, and no create found none: rows were added as they went.
    expect(rollbacks - before, 'creates that found no free slot').toBe(0);
    expect(await takenSlots(workspaceId)).toBe(1 + SLOT_SLICE);
    // Never more than a slice free at once, and once the top-ups are done, not below the low water.
    await eventually(free, (n) => n >= SLOT_LOW_WATER, 10_000, 100);
    expect(await free()).toBeLessThanOrEqual(SLOT_SLICE);
  }, 60_000);

  it('a changed default quota applies to workspaces without an override, and a deleted workspace takes its slots along', async () => {
    const { workspaceId, client } = await workspace();
    expect((await create(client)).status).toBe(201);
    expect(await count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1`, [workspaceId])).toBe(100);
    // As if the configured default had been 1000 (5 more free slots) and is 100 now: the slots no longer match the quota in force.
    await api.dataSource.query(`UPDATE workspaces SET deployment_slots_for = 1000 WHERE id = $1`, [workspaceId]);
    await api.dataSource.query(`INSERT INTO deployment_slots (workspace_id) SELECT $1 FROM generate_series(1, 5)`, [
      workspaceId,
    ]);
    expect((await create(client)).status).toBe(201);
    // Laid out again for the default in force (100): 2 taken, 98 free.
    expect(
      await count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1 AND deployment_id IS NULL`, [
        workspaceId,
      ]),
    ).toBe(98);
    await api.dataSource.query(`DELETE FROM workspaces WHERE id = $1`, [workspaceId]);
    expect(await count(`SELECT count(*) AS n FROM deployment_slots WHERE workspace_id = $1`, [workspaceId])).toBe(0);
  }, 60_000);
});
