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
  listenerId = (await api.http.post('/v2/listeners', { compute_type: 'k8s', compute_id: 'reads', compute_config: { k8s_namespaces: null } })).body.id;
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
  const queued: Array<{ id: string }> = await api.dataSource.query(`SELECT id FROM revisions WHERE status = 'AWAITING_DEPLOY'`);
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

/** The statements sent while `request` is served, after one warm-up call of it. */
async function statementsOf(request: () => Promise<{ status: number }>, status = 200): Promise<string[]> {
  expect((await request()).status).toBe(status);
  recording.sent.length = 0;
  expect((await request()).status).toBe(status);
  return [...recording.sent];
}

describe('statements per read', () => {
  it.each([
    ['GET deployment', () => api.http.get(`/v2/deployments/${deployment.id}`), 1],
    ['GET revision', () => api.http.get(`/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}`), 1],
    ['a list page', () => api.http.get('/v2/deployments?limit=20'), 1],
  ] as const)('%s', async (_name, request, budget) => {
    const statements = await statementsOf(request);
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(budget);
  });

  const poll = (etag?: string) => agent.get(`/v2/listeners/${listenerId}/desired-state`, { headers: etag ? { 'if-none-match': etag } : {} });

  it('a desired-state poll: the check-in, the listener, its work and its credentials in one statement, answered in full or 304', async () => {
    const full = await statementsOf(() => poll());
    expect(full, full.join('\n')).toHaveLength(1);
    const res = await poll();
    expect(res.body.deployments).toHaveLength(3);
    const unchanged = await statementsOf(() => poll(res.headers.get('etag')!), 304);
    expect(unchanged, unchanged.join('\n')).toHaveLength(1);
    expect(unchanged[0]).toMatch(/UPDATE listeners SET last_seen_at/);
  });

  it('a poll that finds something UNKNOWN revives it, then reads again', async () => {
    await api.dataSource.query(`UPDATE deployments SET status = 'UNKNOWN' WHERE id = $1`, [deployment.id]);
    recording.sent.length = 0;
    expect((await poll()).status).toBe(200);
    const statements = [...recording.sent];
    const polls = statements.filter((s) => /FROM listeners l/.test(s));
    expect(polls, statements.join('\n')).toHaveLength(2);
    expect(statements.some((s) => /UPDATE\s+"?deployments"?\s/i.test(s)), statements.join('\n')).toBe(true);
    expect((await api.http.get(`/v2/deployments/${deployment.id}`)).body.status).not.toBe('UNKNOWN');
    expect(await statementsOf(() => poll())).toHaveLength(1);
  });
});
