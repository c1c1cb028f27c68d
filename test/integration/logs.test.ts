import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '@slipway/db';
import { RevisionLogRepository } from '@slipway/pipeline';
import { createListener } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

let api: TestApi;
let listenerId: string;
/** A deployment with two revisions: `first` has 5 build and 3 deploy lines, `second` 2 deploy lines. */
let deploymentId: string;
let first: string;
let second: string;
let foreign: HttpClient;

const BUILD = ['fetching source', 'npm ci', 'added 0 packages', 'npm run build', 'artifact stored'];
const DEPLOY = ['starting process', 'listening on 20001', 'healthy'];
const DEPLOY_SECOND = ['second: starting', 'second: healthy'];

async function imageDeployment(name: string): Promise<{ id: string; latest_revision_id: string }> {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/agent:1' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'logs');
  const d = await imageDeployment('logs-main');
  deploymentId = d.id;
  first = d.latest_revision_id;
  const patched = await api.http.patch(`/v2/deployments/${deploymentId}`, {
    source_revision_config: { image_uri: 'registry.example/agent:2' },
  });
  expect(patched.status, patched.text).toBe(200);
  second = patched.body.latest_revision_id;
  expect(second).not.toBe(first);

  const logs = new RevisionLogRepository(api.dataSource.manager);
  // One append per line, interleaving types and revisions, so ids are not contiguous per log.
  for (let i = 0; i < BUILD.length; i++) {
    await logs.append(first, 'build', [{ level: i === 2 ? 'warn' : 'info', message: BUILD[i]! }]);
    if (DEPLOY[i]) await logs.append(first, 'deploy', [{ level: 'info', message: DEPLOY[i]! }]);
    if (DEPLOY_SECOND[i]) await logs.append(second, 'deploy', [{ level: 'info', message: DEPLOY_SECOND[i]! }]);
  }

  const otherWorkspace = randomUUID();
  await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'logs-other')`, [
    otherWorkspace,
    api.organizationId,
  ]);
  const { key } = await issueApiKey(api.dataSource.manager, {
    organizationId: api.organizationId,
    workspaceId: otherWorkspace,
    scope: 'workspace',
    role: 'admin',
  });
  foreign = api.http.as(key);
});
afterAll(async () => {
  await api?.close();
});

const revisionLogsPath = (revisionId: string, query = '', deployment = deploymentId) =>
  `/v2/deployments/${deployment}/revisions/${revisionId}/logs${query ? `?${query}` : ''}`;
const messages = (body: any): string[] => body.logs.map((l: any) => l.message);

/** Follows next_offset until it is null; returns every page. */
async function allPages(fetchPage: (offset: string | null) => Promise<any>): Promise<any[]> {
  const pages: any[] = [];
  let offset: string | null = null;
  for (let i = 0; i < 20; i++) {
    const body = await fetchPage(offset);
    pages.push(body);
    if (body.next_offset === null) return pages;
    expect(typeof body.next_offset).toBe('string');
    offset = body.next_offset;
  }
  throw new Error('next_offset never became null');
}

describe('GET /v2/deployments/{id}/revisions/{rid}/logs', () => {
  it('returns the build lines oldest first by default, in the C5 shape', async () => {
    const res = await api.http.get(revisionLogsPath(first));
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['logs', 'next_offset']);
    expect(messages(res.body)).toEqual(BUILD);
    for (const line of res.body.logs) {
      expect(Object.keys(line).sort()).toEqual(['id', 'level', 'message', 'timestamp']);
      expect(line.id).toMatch(/^\d+$/);
      expect(line.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(res.body.logs.map((l: any) => l.level)).toEqual(['info', 'info', 'warn', 'info', 'info']);
    // The cursor is the last line's id, so a follower can continue from it.
    expect(res.body.next_offset).toBe(res.body.logs.at(-1).id);
    const after = await api.http.get(revisionLogsPath(first, `offset=${res.body.next_offset}`));
    expect(after.body).toEqual({ logs: [], next_offset: null });
  });

  it('type=deploy gives the deploy lines; desc gives them newest first', async () => {
    expect(messages((await api.http.get(revisionLogsPath(first, 'type=deploy'))).body)).toEqual(DEPLOY);
    expect(messages((await api.http.get(revisionLogsPath(first, 'type=build&order=desc'))).body)).toEqual(
      [...BUILD].reverse(),
    );
    expect(messages((await api.http.get(revisionLogsPath(second, 'type=deploy&order=desc'))).body)).toEqual(
      [...DEPLOY_SECOND].reverse(),
    );
    expect((await api.http.get(revisionLogsPath(second, 'type=build'))).body).toEqual({ logs: [], next_offset: null });
  });

  it.each(['asc', 'desc'] as const)(
    'pages through every line in %s order with next_offset until null',
    async (order) => {
      const pages = await allPages(async (offset) => {
        const res = await api.http.get(
          revisionLogsPath(first, `limit=2&order=${order}${offset ? `&offset=${offset}` : ''}`),
        );
        expect(res.status, res.text).toBe(200);
        return res.body;
      });
      expect(pages.map((p) => p.logs.length)).toEqual([2, 2, 1, 0]);
      expect(pages.flatMap(messages)).toEqual(order === 'asc' ? BUILD : [...BUILD].reverse());
    },
  );

  it('validates limit (1..1000), type, order and offset → 422', async () => {
    const cases: Array<[string, string[]]> = [
      ['limit=0', ['query', 'limit']],
      ['limit=1001', ['query', 'limit']],
      ['limit=two', ['query', 'limit']],
      ['type=runtime', ['query', 'type']],
      ['order=sideways', ['query', 'order']],
      ['offset=abc', ['query', 'offset']],
    ];
    for (const [query, loc] of cases) {
      const res = await api.http.get(revisionLogsPath(first, query));
      expect(res.status, query).toBe(422);
      expect(
        res.body.detail.map((d: any) => d.loc),
        query,
      ).toEqual([loc]);
    }
    expect((await api.http.get(revisionLogsPath(first, 'limit=1000'))).status).toBe(200);
    expect(messages((await api.http.get(revisionLogsPath(first, 'limit=1'))).body)).toEqual([BUILD[0]]);
  });

  it('404 for an unknown deployment or revision, or a revision of another deployment', async () => {
    const missing = randomUUID();
    const unknownDeployment = await api.http.get(revisionLogsPath(first, '', missing));
    expect(unknownDeployment.status).toBe(404);
    expect(unknownDeployment.body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    const unknownRevision = await api.http.get(revisionLogsPath(missing));
    expect(unknownRevision.status).toBe(404);
    expect(unknownRevision.body).toEqual({ detail: `Revision ID ${missing} not found.` });

    const other = await imageDeployment('logs-other');
    const crossed = await api.http.get(revisionLogsPath(first, '', other.id));
    expect(crossed.status).toBe(404);
    expect(crossed.body).toEqual({ detail: `Revision ID ${first} not found.` });
  });

  it("another workspace's key gets 404 and no lines; no key gets 401", async () => {
    const res = await foreign.get(revisionLogsPath(first));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ID ${deploymentId} not found.` });
    expect((await api.http.get(revisionLogsPath(first), { key: null })).status).toBe(401);
  });

  it('is served under /api-host too', async () => {
    expect(messages((await api.http.get(`/api-host${revisionLogsPath(first)}`)).body)).toEqual(BUILD);
  });
});

describe('POST /v1/projects/{id}/revisions/{rid}/build_logs and deploy_logs (CLI)', () => {
  const buildLogs = (body?: unknown, client: HttpClient = api.http, revisionId = first) =>
    client.post(`/v1/projects/${deploymentId}/revisions/${revisionId}/build_logs`, body);

  it('answers what the CLI sends on failure ({order: desc, limit: 30}) in the same shape', async () => {
    const res = await buildLogs({ order: 'desc', limit: 30 });
    expect(res.status, res.text).toBe(200);
    expect(messages(res.body)).toEqual([...BUILD].reverse());
    expect(res.body.next_offset).toBe(res.body.logs.at(-1).id);
  });

  it('follows a log as the CLI does in --verbose mode: asc pages, sending next_offset back', async () => {
    const pages = await allPages(async (offset) => {
      const res = await buildLogs(offset ? { order: 'asc', limit: 2, offset } : { order: 'asc', limit: 2 });
      expect(res.status, res.text).toBe(200);
      return res.body;
    });
    expect(pages.flatMap(messages)).toEqual(BUILD);
    // A line appended later is picked up after the last cursor, without repeating the others.
    const last = pages.at(-2).next_offset;
    await new RevisionLogRepository(api.dataSource.manager).append(first, 'build', [
      { level: 'info', message: 'late line' },
    ]);
    try {
      const more = await buildLogs({ order: 'asc', limit: 50, offset: last });
      expect(messages(more.body)).toEqual(['late line']);
    } finally {
      await api.dataSource.query(`DELETE FROM revision_logs WHERE revision_id = $1 AND message = 'late line'`, [first]);
    }
  });

  it('needs no body; ignores unknown fields; honours the filters the CLI sends; accepts a numeric offset', async () => {
    const bare = await api.http.request('POST', `/v1/projects/${deploymentId}/revisions/${first}/build_logs`);
    expect(bare.status, bare.text).toBe(200);
    expect(messages(bare.body)).toEqual(BUILD);
    const extras = await buildLogs({
      limit: 2,
      tracked: true,
      level: null,
      query: null,
      start_time: '2026-01-01T00:00:00Z',
    });
    expect(messages(extras.body)).toEqual(BUILD.slice(0, 2));
    expect(messages((await buildLogs({ level: 'ERROR', query: 'npm' })).body)).toEqual([]);
    expect(messages((await buildLogs({ level: 'WARN' })).body)).toEqual(['added 0 packages']);
    expect(messages((await buildLogs({ query: 'NPM' })).body)).toEqual(['npm ci', 'npm run build']);
    const numeric = await buildLogs({ limit: 2, offset: Number(extras.body.next_offset) });
    expect(messages(numeric.body)).toEqual(BUILD.slice(2, 4));
  });

  it('validates the body → 422 with body locations', async () => {
    for (const [body, loc] of [
      [{ limit: 0 }, ['body', 'limit']],
      [{ limit: 1001 }, ['body', 'limit']],
      [{ order: 'up' }, ['body', 'order']],
    ] as const) {
      const res = await buildLogs(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail.map((d: any) => d.loc)).toEqual([loc]);
    }
    const bad = await buildLogs({ offset: 'not-a-cursor' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'offset']);
  });

  it('deploy_logs of a revision gives its deploy lines', async () => {
    const res = await api.http.post(`/v1/projects/${deploymentId}/revisions/${first}/deploy_logs`, {
      order: 'asc',
      limit: 100,
    });
    expect(res.status, res.text).toBe(200);
    expect(messages(res.body)).toEqual(DEPLOY);
  });

  it('404s and tenancy as for the GET', async () => {
    const missing = randomUUID();
    const unknown = await api.http.post(`/v1/projects/${missing}/revisions/${first}/build_logs`, {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    const unknownRevision = await buildLogs({}, api.http, missing);
    expect(unknownRevision.body).toEqual({ detail: `Revision ID ${missing} not found.` });
    const crossTenant = await buildLogs({}, foreign);
    expect(crossTenant.status).toBe(404);
    expect(crossTenant.body).toEqual({ detail: `Deployment ID ${deploymentId} not found.` });
    const deploy = await foreign.post(`/v1/projects/${deploymentId}/revisions/${first}/deploy_logs`, {});
    expect(deploy.status).toBe(404);
    expect((await buildLogs({}, api.http.as(null))).status).toBe(401);
  });
});

describe('POST /v1/projects/{id}/deploy_logs (no revision)', () => {
  const deployLogs = (id = deploymentId, client: HttpClient = api.http) =>
    client.post(`/v1/projects/${id}/deploy_logs`, { order: 'asc', limit: 100 });
  const setActive = (revisionId: string | null) =>
    api.dataSource.query(`UPDATE deployments SET active_revision_id = $2 WHERE id = $1`, [deploymentId, revisionId]);

  it("gives the active revision's deploy lines, else the latest revision's", async () => {
    try {
      await setActive(first);
      expect(messages((await deployLogs()).body)).toEqual(DEPLOY);
      await setActive(null);
      expect(messages((await deployLogs()).body)).toEqual(DEPLOY_SECOND);
    } finally {
      await setActive(null);
    }
  });

  it('a deployment without revisions has no lines; unknown or foreign → 404', async () => {
    const created = await api.http.post('/v2/deployments', {
      name: 'logs-empty',
      source: 'internal_source',
      source_config: {},
      source_revision_config: {},
    });
    expect(created.body.latest_revision_id).toBeNull();
    const empty = await deployLogs(created.body.id);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ logs: [], next_offset: null });

    const missing = randomUUID();
    expect((await deployLogs(missing)).body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    const crossTenant = await deployLogs(deploymentId, foreign);
    expect(crossTenant.status).toBe(404);
    expect(crossTenant.body).toEqual({ detail: `Deployment ID ${deploymentId} not found.` });
  });
});
