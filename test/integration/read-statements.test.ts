import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStatements } from '../support/statements.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Round trips to Postgres per poll of the read paths clients poll: a CLI polls a revision until
 * it is DEPLOYED, a listener agent polls its desired state every few seconds. Counts the
 * statements sent while one request is served — the api runs in this process, and nothing else
 * of it reads or writes meanwhile (the relay is not started; each client's API key is used once
 * before, so its cached lookup is not counted). The budgets are today's counts: a change that
 * adds round trips to a poll must say so here.
 */

let api: TestApi;
let agent: HttpClient;
let listenerId: string;
let deployment: { id: string; latest_revision_id: string };
let recording: ReturnType<typeof recordStatements>;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = (
    await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'reads',
      compute_config: { k8s_namespaces: null },
    })
  ).body.id;
  agent = api.http.as(await api.mintKey({ listenerId }));
  for (let i = 0; i < 3; i++) {
    const res = await api.http.post('/v2/deployments', {
      name: `reads-${i}`,
      source: 'external_container',
      source_config: { listener_id: listenerId },
      source_revision_config: { image_uri: 'registry.example/a:1' },
      secrets: [{ name: 'API_TOKEN', value: 'tok' }],
    });
    expect(res.status).toBe(201);
    deployment = res.body;
  }
  // Every rollout under way (what the deployer does once the relay queued it): desired state has entries to render.
  await api.relay.drain();
  const queued: Array<{ id: string }> = await api.dataSource.query(
    `SELECT id FROM revisions WHERE status = 'AWAITING_DEPLOY'`,
  );
  expect(queued).toHaveLength(3);
  for (const { id } of queued) {
    expect(await api.dataSource.transaction((m) => api.flow.transition(m, id, 'DEPLOYING'))).not.toBeNull();
  }
  recording = recordStatements();
});
afterAll(async () => {
  recording?.stop();
  await api?.close();
});

/**
 * The statements sent while `request` is served, after one warm-up call of it. The API key's
 * lookup is left out: it is cached for at most a second (SLIPWAY_API_KEY_CACHE_TTL_MS), so on a
 * loaded machine it may expire between the two calls; it is not the read's cost, and its cache
 * has tests of its own.
 */
async function statementsOf(request: () => Promise<{ status: number }>, status = 200): Promise<string[]> {
  expect((await request()).status).toBe(status);
  recording.sent.length = 0;
  expect((await request()).status).toBe(status);
  return recording.sent.filter((sql) => !/FROM "api_keys"/.test(sql));
}

describe('statements per read', () => {
  it.each([
    ['GET deployment', () => api.http.get(`/v2/deployments/${deployment.id}`), 1],
    [
      'GET revision',
      () => api.http.get(`/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}`),
      1,
    ],
    ['a list page', () => api.http.get('/v2/deployments?limit=20'), 1],
  ] as const)('%s', async (_name, request, budget) => {
    const statements = await statementsOf(request);
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(budget);
  });

  const poll = (etag?: string) =>
    agent.get(`/v2/listeners/${listenerId}/desired-state`, { headers: etag ? { 'if-none-match': etag } : {} });

  /** A poll's first statement (the check-in and the fingerprint of what it renders), and the read of those rows. */
  const isGlance = (sql: string) =>
    /^\s*WITH seen AS \(UPDATE listeners SET last_seen_at/.test(sql) && /sha256/.test(sql);
  const isRead = (sql: string) => /c_database/.test(sql) && !isGlance(sql);

  it('a desired-state poll of an unchanged state is one statement (check-in and fingerprint), answered in full or 304', async () => {
    // The first rendering stores the deployments' credentials (none run a deployer here), which
    // changes the rows: rendered again once.
    expect((await poll()).status).toBe(200);
    const full = await statementsOf(() => poll());
    expect(full.map(isGlance), full.join('\n')).toEqual([true]);
    const res = await poll();
    expect(res.body.deployments).toHaveLength(3);
    const unchanged = await statementsOf(() => poll(res.headers.get('etag')!), 304);
    expect(unchanged.map(isGlance), unchanged.join('\n')).toEqual([true]);
  });

  it('a changed state is read in one more statement, then rendered', async () => {
    const before = await poll();
    await api.dataSource.query(`UPDATE deployments SET name = name || '-x' WHERE id = $1`, [deployment.id]);
    recording.sent.length = 0;
    const after = await poll(before.headers.get('etag')!);
    expect(after.status).toBe(200);
    expect(after.body.deployments.map((e: { name: string }) => e.name)).toContain('reads-2-x');
    expect(
      recording.sent.map((s) => (isGlance(s) ? 'glance' : isRead(s) ? 'read' : s)),
      recording.sent.join('\n'),
    ).toEqual(['glance', 'read']);

    // Any column of any row rendered from counts: the listener's namespaces, a store password.
    await api.dataSource.query(
      `UPDATE listeners SET compute_config = '{"k8s_namespaces": ["elsewhere"]}' WHERE id = $1`,
      [listenerId],
    );
    const moved = await poll(after.headers.get('etag')!);
    expect(moved.status).toBe(200);
    expect(moved.body.deployments.map((e: { namespace: string }) => e.namespace)).toEqual([
      'elsewhere',
      'elsewhere',
      'elsewhere',
    ]);
    await api.dataSource.query(`UPDATE deployment_credentials SET redis_front_port = 1 WHERE deployment_id = $1`, [
      deployment.id,
    ]);
    recording.sent.length = 0;
    expect((await poll(moved.headers.get('etag')!)).status).toBe(304); // read again, rendered the same
    expect(recording.sent.filter(isRead)).toHaveLength(1);
  });

  it('a poll that finds something UNKNOWN revives it, then looks again', async () => {
    await api.dataSource.query(`UPDATE deployments SET status = 'UNKNOWN' WHERE id = $1`, [deployment.id]);
    recording.sent.length = 0;
    expect((await poll()).status).toBe(200);
    const statements = [...recording.sent];
    expect(statements.filter(isGlance), statements.join('\n')).toHaveLength(2);
    expect(
      statements.some((s) => /UPDATE\s+"?deployments"?\s/i.test(s)),
      statements.join('\n'),
    ).toBe(true);
    expect((await api.http.get(`/v2/deployments/${deployment.id}`)).body.status).not.toBe('UNKNOWN');
    expect(await statementsOf(() => poll())).toHaveLength(1);
  });
});
