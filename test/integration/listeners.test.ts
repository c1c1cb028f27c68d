import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/test-api.js';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const body = (computeId: string, extra: Record<string, unknown> = {}) => ({
  compute_type: 'k8s',
  compute_id: computeId,
  compute_config: { k8s_namespaces: ['default', 'agents'] },
  version: '1.0.0',
  ...extra,
});

describe('POST /v2/listeners', () => {
  it('creates a listener and stores it', async () => {
    const res = await api.http.post('/v2/listeners', body('cluster-create'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      compute_type: 'k8s',
      compute_id: 'cluster-create',
      compute_config: { k8s_namespaces: ['default', 'agents'] },
      version: '1.0.0',
      last_seen_at: null,
      tenant_id: api.workspaceId,
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const [row] = await api.dataSource.query('SELECT workspace_id, compute_id FROM listeners WHERE id = $1', [
      res.body.id,
    ]);
    expect(row).toEqual({ workspace_id: api.workspaceId, compute_id: 'cluster-create' });
  });

  it('ignores unknown fields and accepts null namespaces', async () => {
    const res = await api.http.post('/v2/listeners', {
      ...body('cluster-extra'),
      compute_config: { k8s_namespaces: null },
      surprise: 1,
    });
    expect(res.status).toBe(201);
    expect(res.body.compute_config).toEqual({ k8s_namespaces: null, pod_policy: null });
    expect(res.body).not.toHaveProperty('surprise');
  });

  it('reports every bad field at once with loc and type', async () => {
    const res = await api.http.post('/v2/listeners', {
      compute_type: 'ecs',
      compute_id: '',
      compute_config: { k8s_namespaces: ['ok', 'Not_A_Label', 'a'.repeat(64)] },
      version: 5,
    });
    expect(res.status).toBe(422);
    const byLoc = Object.fromEntries(res.body.detail.map((d: any) => [d.loc.join('.'), d.type]));
    expect(byLoc).toEqual({
      'body.compute_type': 'enum',
      'body.compute_id': 'string_too_short',
      'body.compute_config.k8s_namespaces.1': 'string_pattern_mismatch',
      'body.compute_config.k8s_namespaces.2': 'string_too_long',
      'body.version': 'string_type',
    });
    for (const d of res.body.detail) expect(typeof d.msg).toBe('string');
  });

  it('requires compute_type, compute_id and compute_config', async () => {
    const res = await api.http.post('/v2/listeners', {});
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc, d.type])).toEqual([
      [['body', 'compute_type'], 'missing'],
      [['body', 'compute_id'], 'missing'],
      [['body', 'compute_config'], 'missing'],
    ]);
  });

  it('rejects a missing or malformed body', async () => {
    const missing = await api.http.request('POST', '/v2/listeners');
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ loc: ['body'], type: 'missing' });
    const malformed = await api.http.request('POST', '/v2/listeners', { rawBody: '{"compute_type": ' });
    expect(malformed.status).toBe(422);
    expect(malformed.body).toEqual({ detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] });
  });

  it('answers 409 on a duplicate compute_id in the workspace', async () => {
    expect((await api.http.post('/v2/listeners', body('cluster-dup'))).status).toBe(201);
    const res = await api.http.post('/v2/listeners', body('cluster-dup'));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: `Listener for workspace ID '${api.workspaceId}' and compute ID 'cluster-dup' already exists.`,
    });
  });

  it('lets exactly one of two concurrent creates win', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () => api.http.post('/v2/listeners', body('cluster-race'))),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    const [{ count }] = await api.dataSource.query(
      `SELECT count(*)::int AS count FROM listeners WHERE compute_id = 'cluster-race'`,
    );
    expect(count).toBe(1);
  });
});

describe('GET /v2/listeners', () => {
  it('pages newest first with the next offset', async () => {
    for (const n of [1, 2, 3]) expect((await api.http.post('/v2/listeners', body(`page-${n}`))).status).toBe(201);
    const all = await api.http.get('/v2/listeners?limit=100');
    const ids = all.body.resources.map((l: any) => l.compute_id);
    expect(ids.indexOf('page-3')).toBeLessThan(ids.indexOf('page-2'));
    expect(ids.indexOf('page-2')).toBeLessThan(ids.indexOf('page-1'));

    const first = await api.http.get('/v2/listeners?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.resources).toHaveLength(2);
    expect(first.body.offset).toBe(2);
    const second = await api.http.get(`/v2/listeners?limit=2&offset=${first.body.offset}`);
    expect(second.body.offset).toBe(2 + second.body.resources.length);
    const firstIds = first.body.resources.map((l: any) => l.id);
    for (const l of second.body.resources) expect(firstIds).not.toContain(l.id);

    const past = await api.http.get('/v2/listeners?offset=100000');
    expect(past.body).toEqual({ resources: [], offset: 100000 });
  });

  it.each([
    ['limit=0', 'limit', 'greater_than_equal'],
    ['limit=101', 'limit', 'less_than_equal'],
    ['limit=abc', 'limit', 'int_parsing'],
    ['offset=-1', 'offset', 'greater_than_equal'],
    ['offset=x', 'offset', 'int_parsing'],
  ])('rejects %s', async (query, field, type) => {
    const res = await api.http.get(`/v2/listeners?${query}`);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['query', field], type })]);
  });

  it('ignores unknown query parameters', async () => {
    expect((await api.http.get('/v2/listeners?foo=bar')).status).toBe(200);
  });
});

describe('GET/PATCH/PUT/DELETE /v2/listeners/{id}', () => {
  it('gets, patches, replaces and deletes', async () => {
    const { body: created } = await api.http.post('/v2/listeners', body('cluster-life'));
    const path = `/v2/listeners/${created.id}`;

    const got = await api.http.get(path);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);

    const patched = await api.http.patch(path, { version: '2.0.0' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ version: '2.0.0', compute_config: { k8s_namespaces: ['default', 'agents'] } });
    expect(Date.parse(patched.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

    const patchedConfig = await api.http.patch(path, {
      compute_config: { k8s_namespaces: ['prod'] },
      compute_id: 'cluster-life',
    });
    expect(patchedConfig.status).toBe(200);
    expect(patchedConfig.body).toMatchObject({ version: '2.0.0', compute_config: { k8s_namespaces: ['prod'] } });

    const put = await api.http.put(path, {
      compute_type: 'k8s',
      compute_id: 'cluster-life',
      compute_config: { k8s_namespaces: ['x'] },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ version: null, compute_config: { k8s_namespaces: ['x'] } });
    expect((await api.http.get(path)).body).toEqual(put.body);

    const deleted = await api.http.delete(path);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await api.http.get(path);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: `Listener ID ${created.id} not found.` });
    expect((await api.http.delete(path)).status).toBe(404);
  });

  it('refuses to change compute_type or compute_id', async () => {
    const { body: created } = await api.http.post('/v2/listeners', body('cluster-fixed'));
    const path = `/v2/listeners/${created.id}`;
    const put = await api.http.put(path, body('cluster-renamed'));
    expect(put.status).toBe(400);
    expect(put.body.detail).toMatch(/compute_id cannot be changed/);
    const patch = await api.http.patch(path, { compute_id: 'other' });
    expect(patch.status).toBe(400);
    expect((await api.http.get(path)).body.compute_id).toBe('cluster-fixed');
  });

  it('validates PUT as a whole body and PATCH fields', async () => {
    const { body: created } = await api.http.post('/v2/listeners', body('cluster-validate'));
    const put = await api.http.put(`/v2/listeners/${created.id}`, { version: '1' });
    expect(put.status).toBe(422);
    expect(put.body.detail.map((d: any) => d.loc.join('.'))).toEqual([
      'body.compute_type',
      'body.compute_id',
      'body.compute_config',
    ]);
    const patch = await api.http.patch(`/v2/listeners/${created.id}`, {
      compute_config: { k8s_namespaces: ['UPPER'] },
    });
    expect(patch.status).toBe(422);
    expect(patch.body.detail[0].loc).toEqual(['body', 'compute_config', 'k8s_namespaces', 0]);
  });

  it('answers 422 for a malformed id and 404 for an unknown one', async () => {
    const bad = await api.http.get('/v2/listeners/not-a-uuid');
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([expect.objectContaining({ loc: ['path', 'listener_id'], type: 'uuid_parsing' })]);
    const id = randomUUID();
    for (const [method, payload] of [['GET'], ['PATCH', { version: 'x' }], ['PUT', body('x')], ['DELETE']] as const) {
      const res = await api.http.request(method, `/v2/listeners/${id}`, { body: payload });
      expect(res.status, method).toBe(404);
      expect(res.body).toEqual({ detail: `Listener ID ${id} not found.` });
    }
  });

  it('serves the same routes under /api-host', async () => {
    const res = await api.http.post('/api-host/v2/listeners', body('cluster-prefixed'));
    expect(res.status).toBe(201);
    expect((await api.http.get(`/api-host/v2/listeners/${res.body.id}`)).body.compute_id).toBe('cluster-prefixed');
  });
});

describe('listener writes are admin-only', () => {
  const ADMIN_ONLY = { detail: 'This operation requires an admin API key.' };

  it('answers a member 403 on create, PATCH, PUT and DELETE and changes nothing; reads stay open', async () => {
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    const { body: created } = await api.http.post('/v2/listeners', body('cluster-members'));
    const path = `/v2/listeners/${created.id}`;
    const attempts = [
      ['POST', '/v2/listeners', body('cluster-by-member')],
      ['PATCH', path, { version: '9.9.9' }],
      ['PUT', path, body('cluster-members', { version: '9.9.9' })],
      ['DELETE', path, undefined],
    ] as const;
    for (const [method, target, payload] of attempts) {
      const res = await member.request(method, target, { body: payload });
      expect([res.status, res.body], method).toEqual([403, ADMIN_ONLY]);
    }
    expect((await api.dataSource.query(`SELECT 1 FROM listeners WHERE compute_id = 'cluster-by-member'`)).length).toBe(
      0,
    );
    const read = await member.get(path);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created);
    expect((await member.get('/v2/listeners')).status).toBe(200);
  });

  it('a member cannot widen k8s_namespaces to all (null) or to other namespaces; an admin can', async () => {
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    const { body: created } = await api.http.post('/v2/listeners', body('cluster-widen'));
    const path = `/v2/listeners/${created.id}`;
    for (const config of [{ k8s_namespaces: null }, {}, { k8s_namespaces: ['default', 'agents', 'kube-system'] }]) {
      expect((await member.patch(path, { compute_config: config })).status, JSON.stringify(config)).toBe(403);
      expect(
        (await member.put(path, body('cluster-widen', { compute_config: config }))).status,
        JSON.stringify(config),
      ).toBe(403);
    }
    expect((await api.http.get(path)).body.compute_config).toEqual({
      k8s_namespaces: ['default', 'agents'],
      pod_policy: null,
    });
    const widened = await api.http.patch(path, { compute_config: { k8s_namespaces: null } });
    expect([widened.status, widened.body.compute_config]).toEqual([200, { k8s_namespaces: null, pod_policy: null }]);
  });

  it("an admin sets the listener's pod_policy (validated); a member cannot; compute_config replaces it as a whole", async () => {
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    const { body: created } = await api.http.post('/v2/listeners', body('cluster-policy'));
    const path = `/v2/listeners/${created.id}`;
    const policy = {
      volume_types: ['persistentVolumeClaim', 'csi'],
      namespace_config_refs: true,
      service_account: false,
      ingress_annotations: true,
    };
    expect(
      (await member.patch(path, { compute_config: { k8s_namespaces: ['agents'], pod_policy: policy } })).status,
    ).toBe(403);
    const set = await api.http.patch(path, { compute_config: { k8s_namespaces: ['agents'], pod_policy: policy } });
    expect([set.status, set.body.compute_config]).toEqual([200, { k8s_namespaces: ['agents'], pod_policy: policy }]);
    expect(
      (await api.dataSource.query('SELECT compute_config FROM listeners WHERE id = $1', [created.id]))[0].compute_config
        .pod_policy,
    ).toEqual(policy);

    const bad = await api.http.patch(path, {
      compute_config: { pod_policy: { volume_types: ['hostPath', 'nfs'], privileged: true, service_account: 'yes' } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc.join('.'))).toEqual([
      'body.compute_config.pod_policy.volume_types.0',
      'body.compute_config.pod_policy.volume_types.1',
      'body.compute_config.pod_policy.service_account',
    ]);
    expect((await api.http.get(path)).body.compute_config.pod_policy).toEqual(policy);

    const cleared = await api.http.patch(path, { compute_config: { k8s_namespaces: ['agents'] } });
    expect(cleared.body.compute_config).toEqual({ k8s_namespaces: ['agents'], pod_policy: null });
  });
});

describe('tenant isolation', () => {
  it("never shows one workspace's listeners to another", async () => {
    const { body: mine } = await api.http.post('/v2/listeners', body('cluster-a'));
    // A second workspace of the same organization, with its own admin key.
    const otherWorkspaceId = randomUUID();
    await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other')`, [
      otherWorkspaceId,
      api.organizationId,
    ]);
    const otherKey = await api.mintKey({ workspaceId: otherWorkspaceId, role: 'admin' });
    const other = api.http.as(otherKey);

    expect((await other.get(`/v2/listeners/${mine.id}`)).status).toBe(404);
    expect((await other.patch(`/v2/listeners/${mine.id}`, { version: 'x' })).status).toBe(404);
    expect((await other.delete(`/v2/listeners/${mine.id}`)).status).toBe(404);
    expect((await other.get('/v2/listeners')).body.resources).toEqual([]);
    // The same compute_id is free in another workspace.
    expect((await other.post('/v2/listeners', body('cluster-a'))).status).toBe(201);

    // A workspace key naming the other workspace in X-Tenant-Id gets 404, never its data.
    const crossed = await api.http.get(`/v2/listeners/${mine.id}`, { headers: { 'X-Tenant-Id': otherWorkspaceId } });
    expect(crossed.status).toBe(404);
    expect(crossed.body).toEqual({ detail: `Workspace ID ${otherWorkspaceId} not found.` });
    expect((await api.http.get(`/v2/listeners/${mine.id}`)).status).toBe(200);
  });
});
