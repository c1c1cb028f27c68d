import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { craftTarball } from '../support/crafted-tarball.js';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Per-workspace quotas (docs/operations.md, Quotas and retention): defaults from configuration,
 * overrides by an organization admin, and every refused write a 403 naming the quota and its
 * value with nothing written. Each test works in a workspace of its own.
 */

let api: TestApi;
let orgAdmin: HttpClient;

beforeAll(async () => {
  api = await startTestApi({
    SLIPWAY_QUOTA_DEPLOYMENTS: '50',
    SLIPWAY_QUOTA_UPLOADS_PER_DAY: '40',
    SLIPWAY_PUBLIC_URL: 'http://quota.test',
  });
  orgAdmin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
});
afterAll(async () => {
  await api?.close();
});

async function workspace(quotas: Record<string, number | null> = {}) {
  const ws = await otherWorkspaceClient(api, `quota-${randomUUID().slice(0, 8)}`);
  if (Object.keys(quotas).length) {
    const res = await orgAdmin.put(`/v2/workspaces/${ws.workspaceId}/quotas`, quotas);
    expect(res.status, res.text).toBe(200);
  }
  return ws;
}

const uploadDeployment = (client: HttpClient, extra: Record<string, unknown> = {}) =>
  client.post('/v2/deployments', {
    name: `q-${randomUUID().slice(0, 8)}`,
    source: 'internal_source',
    source_config: { deployment_type: 'dev', ...extra },
    source_revision_config: {},
  });

const count = async (sql: string, params: unknown[]) => Number((await api.dataSource.query(sql, params))[0].n);

describe('GET/PUT /v2/workspaces/{id}/quotas', () => {
  it('shows the defaults in force; an organization admin overrides some, null puts one back', async () => {
    const { workspaceId, client } = await workspace();
    const before = await client.get(`/v2/workspaces/${workspaceId}/quotas`);
    expect(before.status, before.text).toBe(200);
    expect(before.body).toEqual({
      workspace_id: workspaceId,
      quotas: {
        deployments: 50,
        min_scale: 10,
        max_scale: 20,
        uploads_per_day: 40,
        upload_bytes: 10 * 1024 ** 3,
        log_lines_per_revision: 50_000,
        log_lines_total: 5_000_000,
        artifacts_kept: 5,
        registry_bytes: 10 * 1024 ** 3,
        trace_retention_days: 14,
      },
      overrides: {},
      // Bytes of images (stored in the registry, unpacked on the deployer): none yet.
      usage: { registry_bytes: 0, registry_stored_bytes: 0, registry_unpacked_bytes: 0 },
    });
    const set = await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: 3, artifacts_kept: 1 });
    expect(set.status, set.text).toBe(200);
    expect(set.body.quotas).toMatchObject({ deployments: 3, artifacts_kept: 1, max_scale: 20 });
    expect(set.body.overrides).toEqual({ deployments: 3, artifacts_kept: 1 });
    const reset = await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: null });
    expect(reset.body.overrides).toEqual({ artifacts_kept: 1 });
    expect(reset.body.quotas.deployments).toBe(50);
  });

  it('only an organization admin may set them; bad values → 422; unknown or foreign workspace → 404', async () => {
    const { workspaceId, client } = await workspace();
    const own = await client.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: 1000 });
    expect(own.status).toBe(403);
    expect((await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: -1 })).status).toBe(422);
    expect((await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, {})).status).toBe(422);
    const missing = randomUUID();
    const res = await orgAdmin.put(`/v2/workspaces/${missing}/quotas`, { deployments: 1 });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Workspace ID ${missing} not found.` });
    // A workspace-scoped credential sees its own workspace's quotas only.
    const other = await workspace();
    expect((await client.get(`/v2/workspaces/${other.workspaceId}/quotas`)).status).toBe(404);
    expect(await count(`SELECT count(*) AS n FROM workspace_quotas WHERE workspace_id = $1`, [workspaceId])).toBe(0);
  });
});

describe('deployments', () => {
  it('the deployment past the quota → 403 naming it; nothing written; raising the quota lets it through', async () => {
    const { workspaceId, client } = await workspace({ deployments: 2 });
    for (let i = 0; i < 2; i++) expect((await uploadDeployment(client)).status).toBe(201);
    const refused = await uploadDeployment(client);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      detail: 'Quota exceeded: this workspace already has 2 deployments (quota deployments = 2 for this workspace).',
    });
    expect(await count(`SELECT count(*) AS n FROM deployments WHERE workspace_id = $1`, [workspaceId])).toBe(2);
    await orgAdmin.put(`/v2/workspaces/${workspaceId}/quotas`, { deployments: 3 });
    expect((await uploadDeployment(client)).status).toBe(201);
  });

  it('creates racing for the last slot: exactly one wins', async () => {
    const { workspaceId, client } = await workspace({ deployments: 1 });
    const results = await Promise.all(Array.from({ length: 6 }, () => uploadDeployment(client)));
    expect(results.map((r) => r.status).sort()).toEqual([201, 403, 403, 403, 403, 403]);
    expect(await count(`SELECT count(*) AS n FROM deployments WHERE workspace_id = $1`, [workspaceId])).toBe(1);
  });
});

describe('scale ceilings', () => {
  it('create or PATCH asking for more than min_scale / max_scale → 403 naming the quota; nothing changes', async () => {
    const { client } = await workspace({ min_scale: 2, max_scale: 4 });
    const tooMany = await uploadDeployment(client, { resource_spec: { min_scale: 1, max_scale: 5 } });
    expect(tooMany.status).toBe(403);
    expect(tooMany.body).toEqual({
      detail: 'Quota exceeded: resource_spec.max_scale is 5 (quota max_scale = 4 for this workspace).',
    });

    const created = await uploadDeployment(client, { resource_spec: { min_scale: 2, max_scale: 4 } });
    expect(created.status, created.text).toBe(201);
    const patched = await client.patch(`/v2/deployments/${created.body.id}`, {
      source_config: { resource_spec: { min_scale: 3, max_scale: 4 } },
    });
    expect(patched.status).toBe(403);
    expect(patched.body).toEqual({
      detail: 'Quota exceeded: resource_spec.min_scale is 3 (quota min_scale = 2 for this workspace).',
    });
    const after = await client.get(`/v2/deployments/${created.body.id}`);
    expect(after.body.source_config.resource_spec).toMatchObject({ min_scale: 2, max_scale: 4 });
    expect(after.body.latest_revision_id).toBeNull();
  });
});

describe('uploads', () => {
  it('upload URLs past uploads_per_day → 403; no upload row is added', async () => {
    const { client } = await workspace({ uploads_per_day: 2 });
    const d = await uploadDeployment(client);
    for (let i = 0; i < 2; i++) expect((await client.post(`/v2/deployments/${d.body.id}/upload-url`)).status).toBe(200);
    const refused = await client.post(`/v2/deployments/${d.body.id}/upload-url`);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      detail:
        'Quota exceeded: this workspace requested 2 upload URLs in the last 24 hours (quota uploads_per_day = 2 for this workspace).',
    });
    expect(await count(`SELECT count(*) AS n FROM uploads WHERE deployment_id = $1`, [d.body.id])).toBe(2);
  });

  it('an upload that would take the stored bytes past upload_bytes → 403 before it is read; nothing kept', async () => {
    const body = craftTarball([
      { path: 'agent/langgraph.json', body: '{}' },
      { path: 'agent/data.txt', body: randomUUID().repeat(50) },
    ]);
    const { workspaceId, client } = await workspace({ upload_bytes: body.length + 10 });
    const d = await uploadDeployment(client);
    const put = async () => {
      const url = (await client.post(`/v2/deployments/${d.body.id}/upload-url`)).body.upload_url as string;
      const res = await fetch(`${api.baseUrl}${new URL(url).pathname}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/gzip' },
        body,
      });
      return { status: res.status, body: await res.json().catch(() => null) };
    };
    expect((await put()).status).toBe(200);
    const refused = await put();
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      detail:
        `Quota exceeded: this workspace stores ${body.length} bytes of uploads and this one ` +
        `adds ${body.length} (quota upload_bytes = ${body.length + 10} for this workspace).`,
    });
    expect(
      await count(
        `SELECT count(*) AS n FROM uploads u JOIN deployments d ON d.id = u.deployment_id ` +
          `WHERE d.workspace_id = $1 AND u.completed_at IS NOT NULL`,
        [workspaceId],
      ),
    ).toBe(1);
  });
});
