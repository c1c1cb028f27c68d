import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createImageDeployment, createListener, otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { SseClient } from '../support/sse.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** Events of a workspace: written by the database on every change, paged and streamed (docs/api.md, Events). */
let api: TestApi;
let listenerId: string;
let foreign: HttpClient;
let foreignKey: string;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'events');
  ({ client: foreign, key: foreignKey } = await otherWorkspaceClient(api, 'events-other'));
});
afterAll(async () => {
  await api?.close();
});

/** Every event of the workspace after `after`, paging `limit` at a time. */
async function allEvents(client: HttpClient, after = '', limit = 100, query = ''): Promise<any[]> {
  const out: any[] = [];
  let cursor = after;
  for (let i = 0; i < 200; i++) {
    const res = await client.get(`/v2/events?limit=${limit}${cursor ? `&after=${cursor}` : ''}${query}`);
    expect(res.status, res.text).toBe(200);
    if (!res.body.resources.length) {
      expect(res.body.offset).toBe(cursor || null);
      return out;
    }
    out.push(...res.body.resources);
    cursor = res.body.offset;
  }
  throw new Error('too many pages');
}

const latestId = async (client: HttpClient) => (await allEvents(client)).at(-1)?.id ?? '';

describe('GET /v2/events', () => {
  it('records creation, every status change and deletion, oldest first, with the C14 shape', async () => {
    const start = await latestId(api.http);
    const d = await createImageDeployment(api, 'events-life', listenerId);
    await api.http.post(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interruption`);
    expect((await api.http.request('DELETE', `/v2/deployments/${d.id}`)).status).toBe(204);
    // The deployer removes the row when teardown ends; done here directly (no deployer runs).
    await api.dataSource.query(`DELETE FROM deployments WHERE id = $1`, [d.id]);

    const events = await allEvents(api.http, start);
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(['created_at', 'data', 'deployment_id', 'id', 'revision_id', 'type']);
      expect(e.id).toMatch(/^\d+$/);
      expect(e.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(e.deployment_id).toBe(d.id);
    }
    const ids = events.map((e) => BigInt(e.id));
    expect([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(ids);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('deployment.created');
    expect(types).toContain('revision.created');
    expect(types.at(-1)).toBe('deployment.deleted');
    expect(events[0].data).toEqual({ name: 'events-life', status: 'AWAITING_DATABASE' });
    const interrupted = events.find((e) => e.type === 'revision.status_changed' && e.data.to === 'INTERRUPTED');
    expect(interrupted).toMatchObject({
      revision_id: d.latest_revision_id,
      data: { status_message: 'Interrupted by request.' },
    });
    expect(events.find((e) => e.type === 'deployment.status_changed')?.data).toEqual({
      from: 'AWAITING_DATABASE',
      to: 'AWAITING_DELETE',
    });
    // Every revision status change is there, chained from its previous status.
    const revisionChanges = events.filter((e) => e.type === 'revision.status_changed');
    for (let i = 1; i < revisionChanges.length; i++)
      expect(revisionChanges[i].data.from).toBe(revisionChanges[i - 1].data.to);
  });

  it('pages with after and limit; filters by deployment and type; another workspace sees none of it', async () => {
    const start = await latestId(api.http);
    const a = await createImageDeployment(api, 'events-page-a', listenerId);
    const b = await createImageDeployment(api, 'events-page-b', listenerId);
    const byOne = await allEvents(api.http, start, 1);
    expect(byOne).toEqual(await allEvents(api.http, start, 100));
    expect(new Set(byOne.map((e) => e.deployment_id))).toEqual(new Set([a.id, b.id]));
    const onlyB = await allEvents(api.http, start, 100, `&deployment_id=${b.id}&types=revision.created`);
    expect(onlyB.map((e) => [e.type, e.revision_id])).toEqual([['revision.created', b.latest_revision_id]]);
    const theirs = await allEvents(foreign);
    expect(theirs.filter((e) => [a.id, b.id].includes(e.deployment_id))).toEqual([]);
  });

  it('ids grow in commit order: a follower paging during 20 concurrent creates sees every event exactly once', async () => {
    const start = await latestId(api.http);
    let writing = true;
    const writes = (async () => {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => createImageDeployment(api, `events-burst-${i}`, listenerId)),
      );
      writing = false;
    })();
    const seen: any[] = [];
    let cursor = start;
    for (;;) {
      const finished = !writing;
      const res = await api.http.get(`/v2/events?limit=7${cursor ? `&after=${cursor}` : ''}`);
      seen.push(...res.body.resources);
      cursor = res.body.offset ?? cursor;
      if (finished && !res.body.resources.length) break;
    }
    await writes;
    const all = await allEvents(api.http, start);
    expect(seen.map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(all.filter((e) => e.type === 'deployment.created')).toHaveLength(20);
  });

  it('orders ids as numbers, not text: paging across 999 → 1000 skips none', async () => {
    // Move the sequence just below the next power of ten, so this test's events cross it.
    const [{ last }] = await api.dataSource.query(`SELECT last_value::int AS last FROM events_id_seq`);
    const boundary = 10 ** String(Math.max(last, 10)).length;
    await api.dataSource.query(`SELECT setval('events_id_seq', $1)`, [boundary - 3]);
    const start = await latestId(api.http);
    const a = await createImageDeployment(api, 'events-digits-a', listenerId);
    const b = await createImageDeployment(api, 'events-digits-b', listenerId);
    const paged = await allEvents(api.http, start, 2);
    const ids = paged.map((e) => BigInt(e.id));
    expect(ids.some((id) => id < BigInt(boundary)) && ids.some((id) => id >= BigInt(boundary))).toBe(true);
    expect([...ids].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))).toEqual(ids);
    const stored = await api.dataSource.query(
      `SELECT id::text AS id FROM events WHERE deployment_id = ANY($1) ORDER BY events.id`,
      [[a.id, b.id]],
    );
    expect(paged.map((e) => e.id)).toEqual(stored.map((r: { id: string }) => r.id));
  });

  it(
    'numbers an event when it has committed, not when it was written: one that commits late comes after, ' +
      'and is not passed over',
    async () => {
      const start = await latestId(api.http);
      // A transaction that writes an event first and commits last.
      const late = api.dataSource.createQueryRunner();
      await late.connect();
      await late.startTransaction();
      try {
        await late.query(
          `INSERT INTO events (workspace_id, type, data) VALUES ($1, 'deployment.created', '{"name":"late"}')`,
          [api.workspaceId],
        );
        const early = await createImageDeployment(api, 'events-commit-early', listenerId);
        const before = await allEvents(api.http, start);
        expect(before.some((e) => e.deployment_id === early.id)).toBe(true);
        expect(before.some((e) => (e.data as { name?: string }).name === 'late')).toBe(false);
        await late.commitTransaction();
        const after = await allEvents(api.http, before.at(-1)!.id);
        expect(after.map((e) => (e.data as { name?: string }).name)).toEqual(['late']);
        expect(BigInt(after[0]!.id) > BigInt(before.at(-1)!.id)).toBe(true);
      } finally {
        if (late.isTransactionActive) await late.rollbackTransaction();
        await late.release();
      }
    },
  );

  it('422 for a bad cursor or type', async () => {
    expect((await api.http.get('/v2/events?after=abc')).status).toBe(422);
    expect((await api.http.get('/v2/events?types=nope')).status).toBe(422);
  });
});

describe('GET /v2/events/stream', () => {
  it('streams new events with SSE headers, resumes after Last-Event-ID, and accepts an org key with X-Tenant-Id', async () => {
    const orgKey = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });
    const url = `${api.baseUrl}/v2/events/stream`;
    const headers = { authorization: `Bearer ${orgKey}`, 'x-tenant-id': api.workspaceId };
    const live = new SseClient(url, headers);
    // Open (its first comment received): everything from now on is sent.
    await live.until(() => live.comments > 0);
    const d = await createImageDeployment(api, 'events-stream', listenerId);
    await live.until((e) => e.some((x) => x.event === 'revision.created' && x.data.deployment_id === d.id));
    expect(live.status).toBe(200);
    expect(live.headers!.get('content-type')).toMatch(/^text\/event-stream/);
    expect(live.headers!.get('cache-control')).toContain('no-cache');
    expect(live.headers!.get('x-accel-buffering')).toBe('no');
    expect(live.events[0]).toMatchObject({ event: 'deployment.created', data: { deployment_id: d.id } });
    for (const e of live.events) expect(e.id).toBe(e.data.id);
    const lastSeen = live.events.at(-1)!.id!;
    live.close();

    // Changes made while disconnected come after reconnecting, each once, then live ones.
    await api.http.post(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interruption`);
    const missed = await allEvents(api.http, lastSeen);
    expect(missed.length).toBeGreaterThan(0);
    const resumed = new SseClient(url, { 'x-api-key': api.adminKey, 'last-event-id': lastSeen });
    await resumed.until((e) => e.length >= missed.length);
    expect(resumed.events.map((e) => e.id)).toEqual(missed.map((e) => e.id));
    await api.http.request('DELETE', `/v2/deployments/${d.id}`);
    await resumed.until((e) =>
      e.some((x) => x.event === 'deployment.status_changed' && x.data.data.to === 'AWAITING_DELETE'),
    );
    const ids = resumed.events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    resumed.close();
  });

  it("never carries another workspace's events; 401 without credentials", async () => {
    const theirs = new SseClient(`${api.baseUrl}/v2/events/stream?after=0`, { 'x-api-key': foreignKey });
    const d = await createImageDeployment(api, 'events-private', listenerId);
    // A marker of their own, so the stream is known to have caught up.
    const theirListener = (
      await foreign.post('/v2/listeners', {
        compute_type: 'k8s',
        compute_id: 'y',
        compute_config: { k8s_namespaces: null },
      })
    ).body.id;
    const marker = await createImageDeployment(foreign, 'events-theirs', theirListener);
    await theirs.until((e) => e.some((x) => x.data.deployment_id === marker.id));
    expect(theirs.events.filter((e) => e.data.deployment_id === d.id)).toEqual([]);
    theirs.close();
    const anonymous = await api.http.get('/v2/events/stream', { key: null });
    expect(anonymous.status).toBe(401);
  });
});
