import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RevisionLogRepository } from '@slipway/pipeline';
import { createImageDeployment, createListener, otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { SseClient } from '../support/sse.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Log filters, the workspace-wide listing, following by polling with start_time, and following
 * as Server-Sent Events (docs/api.md, Logs). Lines are written with the repository the builder
 * and deployer use.
 */
let api: TestApi;
let listenerId: string;
let foreign: HttpClient;
let logs: RevisionLogRepository;

const imageDeployment = (client: HttpClient, name: string, listener = listenerId) =>
  createImageDeployment(client, name, listener);

/** Pins the timestamps of a revision's lines: message → ISO time. */
async function pinTimes(revisionId: string, times: Record<string, string>) {
  for (const [message, at] of Object.entries(times)) {
    await api.dataSource.query(`UPDATE revision_logs SET created_at = $3 WHERE revision_id = $1 AND message = $2`, [
      revisionId,
      message,
      at,
    ]);
  }
}

const messages = (body: any): string[] => body.logs.map((l: any) => l.message);

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'log-follow');
  logs = new RevisionLogRepository(api.dataSource.manager);
  foreign = (await otherWorkspaceClient(api, 'follow-other')).client;
});
afterAll(async () => {
  await api?.close();
});

describe('log filters', () => {
  let d: { id: string; latest_revision_id: string };
  const path = (query: string) => `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/logs?type=deploy&${query}`;
  const LINES = [
    { level: 'info', message: 'boot 100% done' },
    { level: 'warn', message: 'slow start' },
    { level: 'error', message: 'Crash: boom' },
    { level: 'info', message: 'tie a' },
    { level: 'info', message: 'tie b' },
    { level: 'info', message: 'tie c' },
    { level: 'info', message: 'last' },
  ];
  beforeAll(async () => {
    d = await imageDeployment(api.http, 'filters');
    await logs.append(d.latest_revision_id, 'deploy', LINES);
    // Three lines share one timestamp: ties are ordered by id.
    await pinTimes(d.latest_revision_id, {
      'boot 100% done': '2026-11-01T10:00:00.000Z',
      'slow start': '2026-11-01T10:00:01.000Z',
      'Crash: boom': '2026-11-01T10:00:02.000Z',
      'tie a': '2026-11-01T10:00:03.000Z',
      'tie b': '2026-11-01T10:00:03.000Z',
      'tie c': '2026-11-01T10:00:03.000Z',
      last: '2026-11-01T10:00:04.000Z',
    });
  });

  it('level is case-insensitive (WARNING is warn)', async () => {
    expect(messages((await api.http.get(path('level=ERROR'))).body)).toEqual(['Crash: boom']);
    expect(messages((await api.http.get(path('level=warning'))).body)).toEqual(['slow start']);
  });

  it('query is a case-insensitive literal substring', async () => {
    expect(messages((await api.http.get(path('query=crash'))).body)).toEqual(['Crash: boom']);
    expect(messages((await api.http.get(path('query=100%25'))).body)).toEqual(['boot 100% done']);
    expect(messages((await api.http.get(path('query=%25'))).body)).toEqual(['boot 100% done']);
  });

  it('start_time is inclusive, end_time exclusive', async () => {
    const res = await api.http.get(path('start_time=2026-11-01T10:00:01.000Z&end_time=2026-11-01T10:00:03.000Z'));
    expect(messages(res.body)).toEqual(['slow start', 'Crash: boom']);
    expect(messages((await api.http.get(path('start_time=2026-11-01T10:00:03.000Z'))).body)).toEqual([
      'tie a',
      'tie b',
      'tie c',
      'last',
    ]);
    expect(messages((await api.http.get(path('end_time=2026-11-01T10:00:00.000Z'))).body)).toEqual([]);
  });

  it('orders by (timestamp, id) both ways; offset pages through ties one by one, each once', async () => {
    expect(messages((await api.http.get(path('order=desc'))).body)).toEqual(LINES.map((l) => l.message).reverse());
    for (const order of ['asc', 'desc']) {
      const seen: string[] = [];
      let offset = '';
      for (let i = 0; i < 10; i++) {
        const res = await api.http.get(
          path(`order=${order}&limit=1&start_time=2026-11-01T10:00:03.000Z${offset ? `&offset=${offset}` : ''}`),
        );
        expect(res.status, res.text).toBe(200);
        if (!res.body.logs.length) break;
        seen.push(...messages(res.body));
        offset = res.body.next_offset;
      }
      const expected = ['tie a', 'tie b', 'tie c', 'last'];
      expect(seen).toEqual(order === 'asc' ? expected : expected.reverse());
    }
  });

  it('filters combine; a bad time is a 422 naming it', async () => {
    expect(messages((await api.http.get(path('level=info&query=tie&limit=2'))).body)).toEqual(['tie a', 'tie b']);
    const bad = await api.http.get(path('start_time=yesterday'));
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'start_time']);
  });

  it('the CLI body filters work on POST …/deploy_logs', async () => {
    const res = await api.http.post(`/v1/projects/${d.id}/revisions/${d.latest_revision_id}/deploy_logs`, {
      order: 'asc',
      level: 'INFO',
      start_time: '2026-11-01T10:00:03.000Z',
      end_time: '2026-11-01T10:00:04.000Z',
    });
    expect(messages(res.body)).toEqual(['tie a', 'tie b', 'tie c']);
  });
});

describe('GET /v2/deployment-logs', () => {
  it("lists the workspace's lines with deployment, revision and type; never another workspace's", async () => {
    const a = await imageDeployment(api.http, 'wide-a');
    const b = await imageDeployment(api.http, 'wide-b');
    const theirListener = (
      await foreign.post('/v2/listeners', {
        compute_type: 'k8s',
        compute_id: 'x',
        compute_config: { k8s_namespaces: null },
      })
    ).body.id;
    const theirs = await imageDeployment(foreign, 'wide-theirs', theirListener);
    await logs.append(a.latest_revision_id, 'build', [{ level: 'info', message: 'wide-marker a build' }]);
    await logs.append(b.latest_revision_id, 'deploy', [{ level: 'error', message: 'wide-marker b deploy' }]);
    await logs.append(theirs.latest_revision_id, 'deploy', [{ level: 'info', message: 'wide-marker theirs' }]);

    const all = await api.http.get('/v2/deployment-logs?query=wide-marker');
    expect(all.status, all.text).toBe(200);
    expect(all.body.logs.map((l: any) => [l.message, l.deployment_id, l.revision_id, l.type])).toEqual([
      ['wide-marker a build', a.id, a.latest_revision_id, 'build'],
      ['wide-marker b deploy', b.id, b.latest_revision_id, 'deploy'],
    ]);
    expect(messages((await api.http.get(`/v2/deployment-logs?query=wide-marker&deployment_id=${b.id}`)).body)).toEqual([
      'wide-marker b deploy',
    ]);
    expect(
      messages((await api.http.get(`/v2/deployment-logs?query=wide-marker&revision_id=${a.latest_revision_id}`)).body),
    ).toEqual(['wide-marker a build']);
    expect(messages((await api.http.get('/v2/deployment-logs?query=wide-marker&type=deploy&order=desc')).body)).toEqual(
      ['wide-marker b deploy'],
    );
    expect(messages((await foreign.get('/v2/deployment-logs?query=wide-marker')).body)).toEqual(['wide-marker theirs']);
    expect(messages((await api.http.get(`/v2/deployment-logs?deployment_id=${theirs.id}`)).body)).toEqual([]);
  });
});

describe('following by polling with start_time', () => {
  it('sees each of 1,000 lines written while it polls, in order; with the id cursor none comes twice', async () => {
    const d = await imageDeployment(api.http, 'poll-follow');
    const path = `/v1/projects/${d.id}/revisions/${d.latest_revision_id}/deploy_logs`;
    const TOTAL = 1000;
    let writing = true;
    // One writer, appending in batches of varying size, as a RevisionLogWriter does.
    const writer = (async () => {
      let n = 0;
      while (n < TOTAL) {
        const size = Math.min(TOTAL - n, 1 + (n % 23));
        await logs.append(
          d.latest_revision_id,
          'deploy',
          Array.from({ length: size }, (_, i) => ({ level: 'info', message: `line ${n + i}` })),
        );
        n += size;
      }
      writing = false;
    })();

    /** What the published CLIs do: start_time = the last timestamp seen (inclusive), skipping ids already printed. */
    const cliStyle = async () => {
      const printed: string[] = [];
      const seen = new Set<string>();
      let startTime: string | undefined;
      for (;;) {
        const finished = !writing;
        const res = await api.http.post(path, {
          order: 'asc',
          limit: 100,
          ...(startTime ? { start_time: startTime } : {}),
        });
        expect(res.status, res.text).toBe(200);
        const fresh = res.body.logs.filter((l: any) => !seen.has(l.id));
        for (const l of fresh) {
          seen.add(l.id);
          printed.push(l.message);
        }
        if (fresh.length) startTime = fresh.at(-1).timestamp;
        if (finished && !fresh.length) return printed;
      }
    };
    /** start_time plus the id cursor: the server returns only lines after the last one seen, nothing to skip. */
    const cursorStyle = async () => {
      const printed: string[] = [];
      let startTime: string | undefined;
      let offset: string | undefined;
      for (;;) {
        const finished = !writing;
        const res = await api.http.post(path, {
          order: 'asc',
          limit: 100,
          ...(startTime ? { start_time: startTime, offset } : {}),
        });
        expect(res.status, res.text).toBe(200);
        printed.push(...messages(res.body));
        if (res.body.logs.length) {
          startTime = res.body.logs.at(-1).timestamp;
          offset = res.body.next_offset;
        }
        if (finished && !res.body.logs.length) return printed;
      }
    };
    const [cli, cursor] = await Promise.all([cliStyle(), cursorStyle(), writer]);
    const expected = Array.from({ length: TOTAL }, (_, i) => `line ${i}`);
    expect(cli).toEqual(expected);
    expect(cursor).toEqual(expected);
  });
});

describe('GET …/logs?follow=true (Server-Sent Events)', () => {
  it('streams stored then new lines, resumes with Last-Event-ID, and ends when the rollout ends', async () => {
    const d = await imageDeployment(api.http, 'sse-follow');
    const rid = d.latest_revision_id;
    await logs.append(rid, 'deploy', [
      { level: 'info', message: 'one' },
      { level: 'info', message: 'two' },
    ]);
    const url = `${api.baseUrl}/v2/deployments/${d.id}/revisions/${rid}/logs?type=deploy&follow=true`;
    // The API key as a bearer token, as a browser's fetch would send it.
    const first = new SseClient(url, { authorization: `Bearer ${api.adminKey}` });
    await first.until((e) => e.length >= 2);
    expect(first.status).toBe(200);
    expect(first.headers!.get('content-type')).toMatch(/^text\/event-stream/);
    expect(first.headers!.get('cache-control')).toContain('no-cache');
    expect(first.headers!.get('x-accel-buffering')).toBe('no');
    expect(first.comments).toBeGreaterThanOrEqual(1);

    await logs.append(rid, 'deploy', [{ level: 'warn', message: 'three' }]);
    const events = await first.until((e) => e.length >= 3);
    expect(events.map((e) => e.data.message)).toEqual(['one', 'two', 'three']);
    expect(events.every((e) => e.id === e.data.id && e.event === 'message')).toBe(true);
    expect(Object.keys(events[2]!.data).sort()).toEqual(['id', 'level', 'message', 'timestamp']);
    first.close();

    // Written while nobody follows; the resumed stream starts after the last id received.
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'four' }]);
    const resumed = new SseClient(url, { 'x-api-key': api.adminKey, 'last-event-id': events[1]!.id! });
    await resumed.until((e) => e.length >= 2);
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'five' }]);
    await resumed.until((e) => e.length >= 3);

    const interrupted = await api.http.post(`/v2/deployments/${d.id}/revisions/${rid}/interruption`);
    expect(interrupted.status).toBe(200);
    await resumed.done;
    expect(resumed.events.map((e) => e.event)).toEqual(['message', 'message', 'message', 'end']);
    expect(resumed.events.slice(0, 3).map((e) => e.data.message)).toEqual(['three', 'four', 'five']);
    expect(resumed.events[3]!.data).toEqual({ revision_id: rid, status: 'INTERRUPTED' });
  });

  it('honours the filters while following; 404 before any stream for a revision of another workspace', async () => {
    const d = await imageDeployment(api.http, 'sse-filter');
    await logs.append(d.latest_revision_id, 'deploy', [
      { level: 'info', message: 'quiet' },
      { level: 'error', message: 'loud' },
    ]);
    await api.http.post(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interruption`);
    const follow = new SseClient(
      `${api.baseUrl}/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/logs?type=deploy&follow=true&level=error`,
      {
        'x-api-key': api.adminKey,
      },
    );
    await follow.done;
    expect(follow.events.map((e) => e.data.message ?? e.event)).toEqual(['loud', 'end']);

    const theirs = await foreign.get(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/logs?follow=true`);
    expect(theirs.status).toBe(404);
    expect(theirs.headers.get('content-type')).toMatch(/json/);
  });

  it("keeps following the active revision's deploy log after its rollout ended, until it stops serving", async () => {
    const d = await imageDeployment(api.http, 'sse-serving');
    const rid = d.latest_revision_id;
    // Rolled out: what the deployer's hand-off leaves (the revision DEPLOYED and active).
    await api.dataSource.query(`UPDATE revisions SET status = 'DEPLOYED' WHERE id = $1`, [rid]);
    await api.dataSource.query(`UPDATE deployments SET active_revision_id = $2 WHERE id = $1`, [d.id, rid]);
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'rolled out' }], 0);
    const follow = new SseClient(
      `${api.baseUrl}/v2/deployments/${d.id}/revisions/${rid}/logs?type=deploy&follow=true`,
      { 'x-api-key': api.adminKey },
    );
    await follow.until((e) => e.length >= 1);
    // Printed by instance 1 after the rollout: it still comes, on the same stream.
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'a request later' }], 1);
    const events = await follow.until((e) => e.length >= 2);
    expect(events.map((e) => [e.event, e.data.message, e.data.instance])).toEqual([
      ['message', 'rolled out', 0],
      ['message', 'a request later', 1],
    ]);
    expect(follow.ended).toBe(false);
    // Another revision serves now: the stream ends.
    await api.dataSource.query(`UPDATE deployments SET active_revision_id = NULL WHERE id = $1`, [d.id]);
    await api.dataSource.query(
      `SELECT pg_notify('slipway_events', workspace_id::text) FROM deployments WHERE id = $1`,
      [d.id],
    );
    await follow.done;
    expect(follow.events.at(-1)).toMatchObject({ event: 'end', data: { revision_id: rid, status: 'DEPLOYED' } });
  });

  it('filters by instance; the workspace-wide listing follows too, until the client leaves', async () => {
    const d = await imageDeployment(api.http, 'sse-workspace');
    const rid = d.latest_revision_id;
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'from zero' }], 0);
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'from one' }], 1);
    const one = await api.http.get(`/v2/deployments/${d.id}/revisions/${rid}/logs?type=deploy&instance=1`);
    expect(messages(one.body)).toEqual(['from one']);

    const wide = new SseClient(`${api.baseUrl}/v2/deployment-logs?follow=true&deployment_id=${d.id}&instance=0`, {
      'x-api-key': api.adminKey,
    });
    await wide.until((e) => e.length >= 1);
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'later from one' }], 1);
    await logs.append(rid, 'deploy', [{ level: 'info', message: 'later from zero' }], 0);
    const events = await wide.until((e) => e.length >= 2);
    expect(events.map((e) => e.data.message)).toEqual(['from zero', 'later from zero']);
    expect(events[1]).toMatchObject({
      id: events[1]!.data.id,
      data: { deployment_id: d.id, revision_id: rid, type: 'deploy', instance: 0 },
    });
    // Ended revisions or not, it stays open.
    await api.http.post(`/v2/deployments/${d.id}/revisions/${rid}/interruption`);
    await new Promise((r) => setTimeout(r, 500));
    expect(wide.ended).toBe(false);
    wide.close();
  });
});
