import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** Tag keys, tag values, and the values a deployment carries (filtered by `tag_value_ids`). */

let api: TestApi;
let listenerId: string;
let other: HttpClient;
let otherWorkspaceId: string;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = (
    await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'tags-cluster',
      compute_config: { k8s_namespaces: null },
    })
  ).body.id;
  otherWorkspaceId = randomUUID();
  await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other')`, [
    otherWorkspaceId,
    api.organizationId,
  ]);
  other = api.http.as(await api.mintKey({ workspaceId: otherWorkspaceId }));
});
afterAll(async () => {
  await api?.close();
});

async function createKey(key: string, client = api.http): Promise<string> {
  const res = await client.post('/v2/tags/keys', { key });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function createValue(keyId: string, value: string, client = api.http): Promise<string> {
  const res = await client.post(`/v2/tags/keys/${keyId}/values`, { value });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function createDeployment(name: string): Promise<string> {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/agent:1' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

describe('tag keys', () => {
  it('create → 201; get, list, patch, delete', async () => {
    const res = await api.http.post('/v2/tags/keys', { key: 'env', description: 'Where it runs', extra: 'ignored' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      tenant_id: api.workspaceId,
      key: 'env',
      description: 'Where it runs',
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const id = res.body.id;
    expect((await api.http.get(`/v2/tags/keys/${id}`)).body).toEqual(res.body);

    const patched = await api.http.patch(`/v2/tags/keys/${id}`, { key: 'environment', description: '' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, key: 'environment', description: '' });
    const descOnly = await api.http.patch(`/v2/tags/keys/${id}`, { description: 'Stage' });
    expect(descOnly.body).toMatchObject({ key: 'environment', description: 'Stage' });
    expect((await api.http.patch(`/v2/tags/keys/${id}`, {})).body).toMatchObject({
      key: 'environment',
      description: 'Stage',
    });

    const deleted = await api.http.delete(`/v2/tags/keys/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await api.http.get(`/v2/tags/keys/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: `Tag key ID ${id} not found.` });
    expect((await api.http.delete(`/v2/tags/keys/${id}`)).status).toBe(404);
    expect((await api.http.patch(`/v2/tags/keys/${id}`, { description: 'x' })).status).toBe(404);
  });

  it('description defaults to empty', async () => {
    const res = await api.http.post('/v2/tags/keys', { key: 'plain' });
    expect(res.body.description).toBe('');
  });

  it('lists by key in an envelope, paged', async () => {
    for (const key of ['list.c', 'list.a', 'list.b']) await createKey(key, other);
    const res = await other.get('/v2/tags/keys');
    expect(res.status).toBe(200);
    expect(res.body.resources.map((k: any) => k.key)).toEqual(['list.a', 'list.b', 'list.c']);
    expect(res.body.offset).toBe(3);
    const page = await other.get('/v2/tags/keys?limit=1&offset=1');
    expect(page.body).toMatchObject({ resources: [{ key: 'list.b' }], offset: 2 });
    const bad = await other.get('/v2/tags/keys?limit=0');
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [
        { loc: ['query', 'limit'], msg: 'Input should be greater than or equal to 1', type: 'greater_than_equal' },
      ],
    });
  });

  it.each([
    ['empty', '', 'string_too_short', 'String should have at least 1 character'],
    ['101 characters', 'k'.repeat(101), 'string_too_long', 'String should have at most 100 characters'],
    ['a space', 'has space', 'string_pattern_mismatch', "String should match pattern '^[A-Za-z0-9_.:-]+$'"],
    ['a slash', 'team/x', 'string_pattern_mismatch', "String should match pattern '^[A-Za-z0-9_.:-]+$'"],
  ])('key %s → 422 at body.key', async (_what, key, type, msg) => {
    const res = await api.http.post('/v2/tags/keys', { key });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body', 'key'], msg, type }] });
  });

  it('accepts every allowed character and the 100-character maximum', async () => {
    expect((await api.http.post('/v2/tags/keys', { key: 'Az09_.:-' })).status).toBe(201);
    expect((await api.http.post('/v2/tags/keys', { key: 'k'.repeat(100) })).status).toBe(201);
  });

  it('missing key → 422; a PATCH to an invalid key → 422', async () => {
    const res = await api.http.post('/v2/tags/keys', { description: 'x' });
    expect(res.body).toEqual({ detail: [{ loc: ['body', 'key'], msg: 'Field required', type: 'missing' }] });
    const id = await createKey('patch-bad');
    const bad = await api.http.patch(`/v2/tags/keys/${id}`, { key: 'no spaces' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'key'], type: 'string_pattern_mismatch' });
  });

  it('a key is unique per workspace: duplicate create or rename → 409; another workspace may reuse it', async () => {
    await createKey('team');
    const dup = await api.http.post('/v2/tags/keys', { key: 'team' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ detail: `Tag key 'team' already exists in workspace ID '${api.workspaceId}'.` });

    const renamed = await createKey('squad');
    const clash = await api.http.patch(`/v2/tags/keys/${renamed}`, { key: 'team' });
    expect(clash.status).toBe(409);
    expect(clash.body).toEqual({ detail: `Tag key 'team' already exists in workspace ID '${api.workspaceId}'.` });
    expect((await api.http.get(`/v2/tags/keys/${renamed}`)).body.key).toBe('squad');
    // Renaming to its own key is no clash.
    expect((await api.http.patch(`/v2/tags/keys/${renamed}`, { key: 'squad' })).status).toBe(200);

    const theirs = await other.post('/v2/tags/keys', { key: 'team' });
    expect(theirs.status).toBe(201);
    expect(theirs.body.tenant_id).toBe(otherWorkspaceId);
  });

  it("another workspace's key → 404 everywhere, and it is never listed", async () => {
    const theirs = await createKey('private', other);
    for (const res of [
      await api.http.get(`/v2/tags/keys/${theirs}`),
      await api.http.patch(`/v2/tags/keys/${theirs}`, { description: 'mine now' }),
      await api.http.delete(`/v2/tags/keys/${theirs}`),
      await api.http.get(`/v2/tags/keys/${theirs}/values`),
      await api.http.post(`/v2/tags/keys/${theirs}/values`, { value: 'x' }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Tag key ID ${theirs} not found.` });
    }
    expect((await other.get(`/v2/tags/keys/${theirs}`)).body).toMatchObject({ key: 'private', description: '' });
    const mine = await api.http.get('/v2/tags/keys?limit=100');
    expect(mine.body.resources.map((k: any) => k.id)).not.toContain(theirs);
  });

  it('needs a key; a malformed id → 422', async () => {
    expect((await api.http.get('/v2/tags/keys', { key: null })).status).toBe(401);
    const res = await api.http.get('/v2/tags/keys/not-a-uuid');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ loc: ['path', 'tag_key_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }],
    });
  });
});

describe('tag values', () => {
  it('create → 201, list by value, delete → 204', async () => {
    const keyId = await createKey('region');
    const res = await api.http.post(`/v2/tags/keys/${keyId}/values`, { value: 'us-east' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      tag_key_id: keyId,
      value: 'us-east',
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    await createValue(keyId, 'eu-west');
    await createValue(keyId, 'ap-south');
    const list = await api.http.get(`/v2/tags/keys/${keyId}/values`);
    expect(list.status).toBe(200);
    expect(list.body.resources.map((v: any) => v.value)).toEqual(['ap-south', 'eu-west', 'us-east']);
    expect(list.body.offset).toBe(3);
    expect((await api.http.get(`/v2/tags/keys/${keyId}/values?limit=2&offset=2`)).body).toMatchObject({
      resources: [{ value: 'us-east' }],
      offset: 3,
    });

    const deleted = await api.http.delete(`/v2/tags/keys/${keyId}/values/${res.body.id}`);
    expect(deleted.status).toBe(204);
    const again = await api.http.delete(`/v2/tags/keys/${keyId}/values/${res.body.id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `Tag value ID ${res.body.id} not found.` });
    expect((await api.http.get(`/v2/tags/keys/${keyId}/values`)).body.resources.map((v: any) => v.value)).toEqual([
      'ap-south',
      'eu-west',
    ]);
  });

  it('a value is unique per key (409), free under another key', async () => {
    const size = await createKey('size');
    const shape = await createKey('shape');
    await createValue(size, 'large');
    const dup = await api.http.post(`/v2/tags/keys/${size}/values`, { value: 'large' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ detail: `Tag key 'size' already has the value 'large'.` });
    expect((await api.http.post(`/v2/tags/keys/${shape}/values`, { value: 'large' })).status).toBe(201);
  });

  it('value validation → 422', async () => {
    const keyId = await createKey('valid');
    const empty = await api.http.post(`/v2/tags/keys/${keyId}/values`, { value: '' });
    expect(empty.body).toEqual({
      detail: [{ loc: ['body', 'value'], msg: 'String should have at least 1 character', type: 'string_too_short' }],
    });
    const long = await api.http.post(`/v2/tags/keys/${keyId}/values`, { value: 'v'.repeat(256) });
    expect(long.body).toEqual({
      detail: [{ loc: ['body', 'value'], msg: 'String should have at most 255 characters', type: 'string_too_long' }],
    });
    const missing = await api.http.post(`/v2/tags/keys/${keyId}/values`, {});
    expect(missing.body).toEqual({ detail: [{ loc: ['body', 'value'], msg: 'Field required', type: 'missing' }] });
  });

  it('a value addressed through another key, or an unknown key → 404', async () => {
    const a = await createKey('owner-a');
    const b = await createKey('owner-b');
    const value = await createValue(a, 'x');
    const wrongKey = await api.http.delete(`/v2/tags/keys/${b}/values/${value}`);
    expect(wrongKey.status).toBe(404);
    expect(wrongKey.body).toEqual({ detail: `Tag value ID ${value} not found.` });
    const missingKey = randomUUID();
    const res = await api.http.delete(`/v2/tags/keys/${missingKey}/values/${value}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Tag key ID ${missingKey} not found.` });
    expect((await api.http.get(`/v2/tags/keys/${a}/values`)).body.resources).toHaveLength(1);
  });
});

describe('a deployment’s tags', () => {
  let team: string;
  let tier: string;
  let search: string;
  let billing: string;
  let gold: string;

  beforeAll(async () => {
    team = await createKey('dep.team');
    tier = await createKey('dep.tier');
    search = await createValue(team, 'search');
    billing = await createValue(team, 'billing');
    gold = await createValue(tier, 'gold');
  });

  const put = (deploymentId: string, tag_value_ids: unknown) =>
    api.http.put(`/v2/deployments/${deploymentId}/tags`, { tag_value_ids });

  it('PUT replaces the set; GET lists {tag_key_id, key, tag_value_id, value} by key; the deployment shows the ids', async () => {
    const id = await createDeployment('tagged-one');
    expect((await api.http.get(`/v2/deployments/${id}/tags`)).body).toEqual({ resources: [], offset: 0 });

    const res = await put(id, [gold, search]);
    expect(res.status).toBe(200);
    const expected = [
      { tag_key_id: team, key: 'dep.team', tag_value_id: search, value: 'search' },
      { tag_key_id: tier, key: 'dep.tier', tag_value_id: gold, value: 'gold' },
    ];
    expect(res.body).toEqual({ resources: expected, offset: 2 });
    expect((await api.http.get(`/v2/deployments/${id}/tags`)).body).toEqual({ resources: expected, offset: 2 });
    expect((await api.http.get(`/v2/deployments/${id}/tags?limit=1&offset=1`)).body).toEqual({
      resources: [expected[1]],
      offset: 2,
    });
    expect((await api.http.get(`/v2/deployments/${id}`)).body.tag_value_ids).toEqual([search, gold].sort());

    // Replacing, not adding: billing replaces search, gold is dropped.
    const replaced = await put(id, [billing]);
    expect(replaced.body).toEqual({
      resources: [{ tag_key_id: team, key: 'dep.team', tag_value_id: billing, value: 'billing' }],
      offset: 1,
    });
    expect((await api.http.get(`/v2/deployments/${id}`)).body.tag_value_ids).toEqual([billing]);

    const cleared = await put(id, []);
    expect(cleared.body).toEqual({ resources: [], offset: 0 });
    expect((await api.http.get(`/v2/deployments/${id}`)).body.tag_value_ids).toEqual([]);
  });

  it('an unknown value, or one of another workspace → 404 naming it, and the set is unchanged', async () => {
    const id = await createDeployment('tagged-404');
    await put(id, [search]);
    const missing = randomUUID();
    const unknown = await put(id, [gold, missing]);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: `Tag value ID ${missing} not found.` });

    const theirKey = await createKey('foreign', other);
    const theirValue = await createValue(theirKey, 'v', other);
    const foreign = await put(id, [theirValue]);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: `Tag value ID ${theirValue} not found.` });
    expect((await api.http.get(`/v2/deployments/${id}`)).body.tag_value_ids).toEqual([search]);
  });

  it('two values of one key → 400, and the set is unchanged', async () => {
    const id = await createDeployment('tagged-400');
    await put(id, [gold]);
    const res = await put(id, [search, gold, billing]);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: `Tag values ${search} and ${billing} both belong to tag key 'dep.team'; a deployment carries at most one value per key.`,
    });
    expect((await api.http.get(`/v2/deployments/${id}`)).body.tag_value_ids).toEqual([gold]);
  });

  it('body validation → 422', async () => {
    const id = await createDeployment('tagged-422');
    expect((await api.http.put(`/v2/deployments/${id}/tags`, {})).body).toEqual({
      detail: [{ loc: ['body', 'tag_value_ids'], msg: 'Field required', type: 'missing' }],
    });
    expect((await put(id, ['nope'])).body).toEqual({
      detail: [{ loc: ['body', 'tag_value_ids', 0], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }],
    });
    expect((await put(id, [gold, gold])).body).toEqual({
      detail: [
        { loc: ['body', 'tag_value_ids', 1], msg: 'Value error, list items must be unique', type: 'value_error' },
      ],
    });
    expect((await put(id, 'x')).body).toEqual({
      detail: [{ loc: ['body', 'tag_value_ids'], msg: 'Input should be a valid list', type: 'list_type' }],
    });
  });

  it('unknown or foreign deployment → 404', async () => {
    const missing = randomUUID();
    for (const res of [await api.http.get(`/v2/deployments/${missing}/tags`), await put(missing, [gold])]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    }
    const mine = await createDeployment('tagged-private');
    await put(mine, [gold]);
    expect((await other.get(`/v2/deployments/${mine}/tags`)).status).toBe(404);
    expect((await other.put(`/v2/deployments/${mine}/tags`, { tag_value_ids: [] })).status).toBe(404);
    expect((await api.http.get(`/v2/deployments/${mine}`)).body.tag_value_ids).toEqual([gold]);
  });

  it('deleting a value or a key takes it off every deployment', async () => {
    const color = await createKey('dep.color');
    const red = await createValue(color, 'red');
    const blue = await createValue(color, 'blue');
    const a = await createDeployment('tagged-del-a');
    const b = await createDeployment('tagged-del-b');
    await put(a, [red, gold]);
    await put(b, [blue]);

    expect((await api.http.delete(`/v2/tags/keys/${color}/values/${red}`)).status).toBe(204);
    expect((await api.http.get(`/v2/deployments/${a}`)).body.tag_value_ids).toEqual([gold]);
    expect((await api.http.delete(`/v2/tags/keys/${color}`)).status).toBe(204);
    expect((await api.http.get(`/v2/deployments/${b}`)).body.tag_value_ids).toEqual([]);
    const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM tag_values WHERE tag_key_id = $1`, [
      color,
    ]);
    expect(row.n).toBe(0);
  });

  it('drives the tag_value_ids list filter (deployments carrying ALL the values)', async () => {
    const one = await createDeployment('filter-one');
    const two = await createDeployment('filter-two');
    await put(one, [search, gold]);
    await put(two, [search]);
    // Other tests of this file tag deployments too: look only at this test's two.
    const names = async (ids: string[]) =>
      (await api.http.get(`/v2/deployments?name_contains=filter-&tag_value_ids=${ids.join(',')}`)).body.resources.map(
        (d: any) => d.name,
      );
    expect(await names([search])).toEqual(['filter-two', 'filter-one']);
    expect(await names([search, gold])).toEqual(['filter-one']);
    expect(await names([gold, billing])).toEqual([]);
    await put(one, []);
    expect(await names([search])).toEqual(['filter-two']);
  });

  it('concurrent PUTs on one deployment serialize: the result is one of the requested sets', async () => {
    const id = await createDeployment('tagged-race');
    const sets = [[search], [billing], [gold], [search, gold], [billing, gold]];
    const results = await Promise.all(sets.map((s) => put(id, s)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const final = (await api.http.get(`/v2/deployments/${id}`)).body.tag_value_ids;
    expect(sets.map((s) => [...s].sort())).toContainEqual(final);
  });
});
