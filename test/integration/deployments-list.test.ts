import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repohostFixture } from '../support/git-fixtures.js';
import { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** GET /v2/deployments (docs/api.md, Deployments): every filter, order, envelope and query validation. */

let api: TestApi;
let listenerId: string;
/** The fixture deployments by name, created in this order (so newest first is the reverse). */
const ids: Record<string, string> = {};
const order = ['self-alpha', 'self-beta', 'cloud-alpha', 'cloud-prod', 'cloud-free', 'axb-name'] as const;
let team: { search: string; billing: string };
let tier: { gold: string };

beforeAll(async () => {
  api = await startTestApi();
  const listener = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'list-cluster',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = listener.body.id;
  const repo = await repohostFixture(api);

  const image = (name: string, imageVersion: string | null) => ({
    name,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: `registry.example/${name}:1` },
    image_version: imageVersion,
  });
  const repohost = (name: string, type: string, imageVersion: string | null = null) => ({
    name,
    source: 'repohost',
    deployment_type: type,
    source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl },
    source_revision_config: { repo_ref: 'main' },
    image_version: imageVersion,
  });
  const bodies: Record<(typeof order)[number], object> = {
    'self-alpha': image('self-alpha', '1.0'),
    'self-beta': image('self-beta', '2.0'),
    'cloud-alpha': repohost('cloud-alpha', 'dev', '1.0'),
    'cloud-prod': repohost('cloud-prod', 'prod'),
    'cloud-free': repohost('cloud-free', 'dev_free'),
    'axb-name': repohost('axb-name', 'dev'),
  };
  // One at a time, so created_at is strictly increasing in this order.
  for (const name of order) {
    const res = await api.http.post('/v2/deployments', bodies[name]);
    expect(res.status, name).toBe(201);
    ids[name] = res.body.id;
  }
  // Statuses the pipeline would set: READY after provisioning; one deletion in progress.
  await api.dataSource.query(`UPDATE deployments SET status = 'READY' WHERE id = ANY($1::uuid[])`, [
    [ids['self-beta'], ids['cloud-prod']],
  ]);
  expect((await api.http.delete(`/v2/deployments/${ids['cloud-free']}`)).status).toBe(204);

  // Tags: self-alpha carries team=search and tier=gold; cloud-alpha team=search; cloud-prod team=billing.
  const teamKey = (await api.http.post('/v2/tags/keys', { key: 'team' })).body.id;
  const tierKey = (await api.http.post('/v2/tags/keys', { key: 'tier' })).body.id;
  team = {
    search: (await api.http.post(`/v2/tags/keys/${teamKey}/values`, { value: 'search' })).body.id,
    billing: (await api.http.post(`/v2/tags/keys/${teamKey}/values`, { value: 'billing' })).body.id,
  };
  tier = { gold: (await api.http.post(`/v2/tags/keys/${tierKey}/values`, { value: 'gold' })).body.id };
  for (const [name, values] of [
    ['self-alpha', [team.search, tier.gold]],
    ['cloud-alpha', [team.search]],
    ['cloud-prod', [team.billing]],
  ] as const) {
    expect((await api.http.put(`/v2/deployments/${ids[name]}/tags`, { tag_value_ids: values })).status).toBe(200);
  }
});
afterAll(async () => {
  await api?.close();
});

/** Names in the order the API returned them. */
async function names(query: string): Promise<string[]> {
  const res = await api.http.get(`/v2/deployments${query}`);
  expect(res.status, `${query}: ${res.text}`).toBe(200);
  return res.body.resources.map((d: any) => d.name);
}

const newestFirst = (...wanted: string[]) => [...order].reverse().filter((n) => wanted.includes(n));

describe('order and envelope', () => {
  it('lists newest first with the next offset', async () => {
    const res = await api.http.get('/v2/deployments');
    expect(res.status).toBe(200);
    expect(res.body.resources.map((d: any) => d.name)).toEqual([...order].reverse());
    expect(res.body.offset).toBe(order.length);
    // Items are full deployments, secrets masked and tags attached.
    const alpha = res.body.resources.find((d: any) => d.name === 'self-alpha');
    expect(alpha).toMatchObject({
      id: ids['self-alpha'],
      source: 'external_container',
      tag_value_ids: [team.search, tier.gold].sort(),
    });
  });

  it('pages with limit/offset; offset = request offset + number returned', async () => {
    const first = await api.http.get('/v2/deployments?limit=4');
    expect(first.body.resources.map((d: any) => d.name)).toEqual([...order].reverse().slice(0, 4));
    expect(first.body.offset).toBe(4);
    const second = await api.http.get(`/v2/deployments?limit=4&offset=${first.body.offset}`);
    expect(second.body.resources.map((d: any) => d.name)).toEqual([...order].reverse().slice(4));
    expect(second.body.offset).toBe(6);
    const past = await api.http.get('/v2/deployments?offset=50');
    expect(past.body).toEqual({ resources: [], offset: 50 });
  });

  it('limit=1 and limit=100 are accepted; a filter this server does not implement is a 422 naming it', async () => {
    expect(await names('?limit=1')).toEqual(['axb-name']);
    expect(await names('?limit=100')).toHaveLength(order.length);
    const res = await api.http.get('/v2/deployments?limit=100&tracked=1&foo=bar');
    expect(res.status).toBe(422);
    expect(res.body.detail.map((i: { loc: string[]; type: string }) => [i.loc, i.type])).toEqual([
      [['query', 'tracked'], 'extra_forbidden'],
      [['query', 'foo'], 'extra_forbidden'],
    ]);
  });

  it('is served under /api-host too', async () => {
    const res = await api.http.get('/api-host/v2/deployments?limit=1');
    expect(res.status).toBe(200);
    expect(res.body.resources.map((d: any) => d.name)).toEqual(['axb-name']);
  });

  it("never lists another workspace's deployments", async () => {
    const otherWorkspaceId = randomUUID();
    await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other')`, [
      otherWorkspaceId,
      api.organizationId,
    ]);
    const other = new HttpClient(api.baseUrl, await api.mintKey({ workspaceId: otherWorkspaceId }));
    expect((await other.get('/v2/deployments')).body).toEqual({ resources: [], offset: 0 });
    expect((await other.get(`/v2/deployments?deployment_ids=${ids['self-alpha']}`)).body.resources).toEqual([]);
  });
});

describe('filters', () => {
  it('name_contains: case-insensitive substring; empty means no filter', async () => {
    expect(await names('?name_contains=alpha')).toEqual(newestFirst('self-alpha', 'cloud-alpha'));
    expect(await names('?name_contains=ALPHA')).toEqual(newestFirst('self-alpha', 'cloud-alpha'));
    expect(await names('?name_contains=Cloud-')).toEqual(newestFirst('cloud-alpha', 'cloud-prod', 'cloud-free'));
    expect(await names('?name_contains=')).toHaveLength(order.length);
  });

  it('name_contains: `_` and `%` are literal characters, not LIKE wildcards', async () => {
    // `a_b` as a LIKE pattern would match "axb"; `%` would match everything.
    expect(await names('?name_contains=a_b')).toEqual([]);
    expect(await names('?name_contains=%25')).toEqual([]);
    expect(await names('?name_contains=a%25b')).toEqual([]);
    expect(await names('?name_contains=axb')).toEqual(['axb-name']);
  });

  it('name: exact only', async () => {
    expect(await names('?name=cloud-prod')).toEqual(['cloud-prod']);
    expect(await names('?name=cloud')).toEqual([]);
    expect(await names('?name=CLOUD-PROD')).toEqual([]);
  });

  it('status', async () => {
    expect(await names('?status=READY')).toEqual(newestFirst('self-beta', 'cloud-prod'));
    expect(await names('?status=AWAITING_DELETE')).toEqual(['cloud-free']);
    expect(await names('?status=AWAITING_DATABASE')).toEqual(newestFirst('self-alpha', 'cloud-alpha', 'axb-name'));
    expect(await names('?status=UNUSED')).toEqual([]);
  });

  it('remote_reconciled: true = listener-reconciled (self-hosted), false = the others', async () => {
    expect(await names('?remote_reconciled=true')).toEqual(newestFirst('self-alpha', 'self-beta'));
    expect(await names('?remote_reconciled=false')).toEqual(
      newestFirst('cloud-alpha', 'cloud-prod', 'cloud-free', 'axb-name'),
    );
  });

  it('tag_value_ids: deployments carrying ALL the given values', async () => {
    expect(await names(`?tag_value_ids=${team.search}`)).toEqual(newestFirst('self-alpha', 'cloud-alpha'));
    expect(await names(`?tag_value_ids=${team.search},${tier.gold}`)).toEqual(['self-alpha']);
    expect(await names(`?tag_value_ids=${tier.gold},${team.search}`)).toEqual(['self-alpha']);
    expect(await names(`?tag_value_ids=${team.search},${team.billing}`)).toEqual([]);
    expect(await names(`?tag_value_ids=${team.billing}`)).toEqual(['cloud-prod']);
    // A repeated id counts once; an id nobody carries matches nothing.
    expect(await names(`?tag_value_ids=${team.search},${team.search}`)).toEqual(
      newestFirst('self-alpha', 'cloud-alpha'),
    );
    expect(await names(`?tag_value_ids=${randomUUID()}`)).toEqual([]);
  });

  it('image_version: exact', async () => {
    expect(await names('?image_version=1.0')).toEqual(newestFirst('self-alpha', 'cloud-alpha'));
    expect(await names('?image_version=2.0')).toEqual(['self-beta']);
    expect(await names('?image_version=1')).toEqual([]);
  });

  it('deployment_type', async () => {
    expect(await names('?deployment_type=dev')).toEqual(newestFirst('cloud-alpha', 'axb-name'));
    expect(await names('?deployment_type=prod')).toEqual(['cloud-prod']);
    expect(await names('?deployment_type=dev_free')).toEqual(['cloud-free']);
  });

  it('deployment_ids: any of the given ids', async () => {
    expect(await names(`?deployment_ids=${ids['self-alpha']},${ids['cloud-prod']}`)).toEqual(
      newestFirst('self-alpha', 'cloud-prod'),
    );
    expect(await names(`?deployment_ids=${ids['axb-name']}`)).toEqual(['axb-name']);
    expect(await names(`?deployment_ids=${randomUUID()}`)).toEqual([]);
  });

  it('filters combine (AND), and paging applies after filtering', async () => {
    expect(await names(`?remote_reconciled=false&name_contains=cloud&status=AWAITING_DATABASE`)).toEqual([
      'cloud-alpha',
    ]);
    expect(await names(`?tag_value_ids=${team.search}&image_version=1.0&remote_reconciled=true`)).toEqual([
      'self-alpha',
    ]);
    const page = await api.http.get('/v2/deployments?name_contains=alpha&limit=1&offset=1');
    expect(page.body.resources.map((d: any) => d.name)).toEqual(['self-alpha']);
    expect(page.body.offset).toBe(2);
  });
});

describe('query validation → 422', () => {
  it.each([
    ['limit=0', ['query', 'limit'], 'greater_than_equal', 'Input should be greater than or equal to 1'],
    ['limit=101', ['query', 'limit'], 'less_than_equal', 'Input should be less than or equal to 100'],
    [
      'limit=abc',
      ['query', 'limit'],
      'int_parsing',
      'Input should be a valid integer, unable to parse string as an integer',
    ],
    [
      'limit=1.5',
      ['query', 'limit'],
      'int_from_float',
      'Input should be a valid integer, got a number with a fractional part',
    ],
    ['offset=-1', ['query', 'offset'], 'greater_than_equal', 'Input should be greater than or equal to 0'],
    [
      'status=BOGUS',
      ['query', 'status'],
      'enum',
      "Input should be 'AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE' or 'UNKNOWN'",
    ],
    ['deployment_type=staging', ['query', 'deployment_type'], 'enum', "Input should be 'dev_free', 'dev' or 'prod'"],
    ['deployment_ids=not-a-uuid', ['query', 'deployment_ids', 0], 'uuid_parsing', 'Input should be a valid UUID'],
    [
      `tag_value_ids=${'00000000-0000-4000-8000-000000000000'},nope`,
      ['query', 'tag_value_ids', 1],
      'uuid_parsing',
      'Input should be a valid UUID',
    ],
    [
      'remote_reconciled=maybe',
      ['query', 'remote_reconciled'],
      'bool_parsing',
      'Input should be a valid boolean, unable to interpret input',
    ],
  ])('%s', async (query, loc, type, msg) => {
    const res = await api.http.get(`/v2/deployments?${query}`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc, msg, type }] });
  });

  it('reports every bad parameter at once', async () => {
    const res = await api.http.get('/v2/deployments?limit=0&offset=-1&status=nope');
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => d.loc)).toEqual([
      ['query', 'limit'],
      ['query', 'offset'],
      ['query', 'status'],
    ]);
  });
});
