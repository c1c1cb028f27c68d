import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createImageDeployment, createListener, otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** The operations of the hosted API the published clients call (docs/api.md, Deployments and Revisions). */
let api: TestApi;
let listenerId: string;
let foreign: HttpClient;

const imageDeployment = (client: HttpClient, name: string, listener = listenerId) =>
  createImageDeployment(client, name, listener);

async function uploadDeployment(client: HttpClient, name: string, deploymentType: string) {
  const res = await client.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: deploymentType },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string };
}

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'hosted-ops');
  foreign = (await otherWorkspaceClient(api, 'hosted-other')).client;
});
afterAll(async () => {
  await api?.close();
});

describe('POST /v2/deployments/{id}/revisions', () => {
  it('always creates a revision, 201 with the Revision, even with an empty body', async () => {
    const d = await imageDeployment(api.http, 'ops-revisions');
    const res = await api.http.post(`/v2/deployments/${d.id}/revisions`, {});
    expect(res.status, res.text).toBe(201);
    expect(res.body.id).not.toBe(d.latest_revision_id);
    expect(res.body.deployment_id).toBe(d.id);
    expect(res.body.source_revision_config.image_uri).toBe('registry.example/agent:1');
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body.latest_revision_id).toBe(res.body.id);

    const withImage = await api.http.post(`/v2/deployments/${d.id}/revisions`, {
      source_revision_config: { image_uri: 'registry.example/agent:2' },
    });
    expect(withImage.status, withImage.text).toBe(201);
    expect(withImage.body.source_revision_config.image_uri).toBe('registry.example/agent:2');
    const list = await api.http.get(`/v2/deployments/${d.id}/revisions`);
    expect(list.body.resources.map((r: any) => r.id)).toEqual([withImage.body.id, res.body.id, d.latest_revision_id]);
  });

  it('404 for a deployment of another workspace, and nothing is created there', async () => {
    const d = await imageDeployment(api.http, 'ops-revisions-foreign');
    const res = await foreign.post(`/v2/deployments/${d.id}/revisions`, {});
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ID ${d.id} not found.` });
    expect((await api.http.get(`/v2/deployments/${d.id}/revisions`)).body.resources).toHaveLength(1);
  });

  it('400 for an upload deployment without a tarball: nothing to build', async () => {
    const d = await uploadDeployment(api.http, 'ops-revisions-upload', 'dev');
    const res = await api.http.post(`/v2/deployments/${d.id}/revisions`, {});
    expect(res.status, res.text).toBe(400);
    expect((await api.http.get(`/v2/deployments/${d.id}/revisions`)).body.resources).toEqual([]);
  });
});

describe('POST …/revisions/{rid}/interrupt', () => {
  it('is an alias of /interruption: 200 with the INTERRUPTED revision, then 400', async () => {
    const d = await imageDeployment(api.http, 'ops-interrupt');
    const res = await api.http.post(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interrupt`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('INTERRUPTED');
    const again = await api.http.post(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interrupt`);
    expect(again.status).toBe(400);
  });
});

describe('DELETE /v2/deployments?deployment_ids=…', () => {
  it('200 {} when every id is deleted (repeated parameters)', async () => {
    const a = await imageDeployment(api.http, 'ops-bulk-a');
    const b = await imageDeployment(api.http, 'ops-bulk-b');
    const res = await api.http.request('DELETE', `/v2/deployments?deployment_ids=${a.id}&deployment_ids=${b.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({});
    for (const id of [a.id, b.id])
      expect((await api.http.get(`/v2/deployments/${id}`)).body.status).toBe('AWAITING_DELETE');
  });

  it('207 with a result per id for mixed ids; another workspace’s deployment is a 404 entry and survives', async () => {
    const mine = await imageDeployment(api.http, 'ops-bulk-mine');
    const foreignListener = (
      await foreign.post('/v2/listeners', {
        compute_type: 'k8s',
        compute_id: 'other',
        compute_config: { k8s_namespaces: null },
      })
    ).body.id;
    const theirs = await imageDeployment(foreign, 'ops-bulk-theirs', foreignListener);
    const missing = randomUUID();
    const res = await api.http.request('DELETE', `/v2/deployments?deployment_ids=${mine.id},${theirs.id},${missing}`);
    expect(res.status, res.text).toBe(207);
    expect(res.body).toEqual({
      results: [
        { deployment_id: mine.id, status: 204 },
        { deployment_id: theirs.id, status: 404, detail: `Deployment ID ${theirs.id} not found.` },
        { deployment_id: missing, status: 404, detail: `Deployment ID ${missing} not found.` },
      ],
    });
    expect((await api.http.get(`/v2/deployments/${mine.id}`)).body.status).toBe('AWAITING_DELETE');
    expect((await foreign.get(`/v2/deployments/${theirs.id}`)).body.status).toBe('AWAITING_DATABASE');
  });

  it('422 without ids, with a bad id, or with more than 100', async () => {
    expect((await api.http.request('DELETE', '/v2/deployments')).status).toBe(422);
    const bad = await api.http.request('DELETE', '/v2/deployments?deployment_ids=nope');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc[0]).toBe('query');
    const many = Array.from({ length: 101 }, () => randomUUID()).join(',');
    expect((await api.http.request('DELETE', `/v2/deployments?deployment_ids=${many}`)).status).toBe(422);
  });
});

describe('GET /v2/deployments/free-count', () => {
  it('counts dev_free deployments of the whole organization, routed before /{deployment_id}', async () => {
    const before = await api.http.get('/v2/deployments/free-count');
    expect(before.status, before.text).toBe(200);
    expect(Object.keys(before.body)).toEqual(['count']);
    await uploadDeployment(api.http, 'ops-free-1', 'dev_free');
    await uploadDeployment(api.http, 'ops-not-free', 'dev');
    await uploadDeployment(foreign, 'ops-free-2', 'dev_free');
    expect((await api.http.get('/v2/deployments/free-count')).body).toEqual({ count: before.body.count + 2 });
    expect((await foreign.get('/v2/deployments/free-count')).body).toEqual({ count: before.body.count + 2 });
  });
});

describe('remote_reconciled on the revision list', () => {
  it('keeps the revisions of a listener-reconciled deployment for true, none for false', async () => {
    const d = await imageDeployment(api.http, 'ops-remote');
    const path = `/v2/deployments/${d.id}/revisions`;
    expect((await api.http.get(`${path}?remote_reconciled=true`)).body.resources.map((r: any) => r.id)).toEqual([
      d.latest_revision_id,
    ]);
    expect((await api.http.get(`${path}?remote_reconciled=false`)).body.resources).toEqual([]);
  });
});

describe('OpenAPI', () => {
  it('documents every new operation', async () => {
    const doc = (await api.http.get('/openapi.json')).body;
    const ops = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((p) =>
      Object.values(p).map((o) => o.operationId),
    );
    for (const id of ['createRevision', 'interruptRevisionAlias', 'deleteDeployments', 'getFreeDeploymentCount'])
      expect(ops).toContain(id);
  });
});
