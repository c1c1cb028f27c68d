import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import type { RevisionStatus } from '@slipway/domain';
import type { RevisionTransitionOptions } from '@slipway/pipeline';
import { createRepohostDeployment } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** Revisions of a deployment (docs/api.md, Revisions; Statuses): list, get, redeploy, interruption. */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'rev-cluster',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

async function createImage(name: string, imageUri = 'registry.example/agent:1.0.0') {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: { listener_id: listenerId, resource_spec: { cpu: 0.5 } },
    source_revision_config: { image_uri: imageUri },
    secrets: [{ name: 'API_TOKEN', value: 'tok-revision-secret' }],
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const createRepohost = (name: string) => createRepohostDeployment(api, name);

/** Moves a revision through the product's own transition function, as the workers do. */
async function move(revisionId: string, to: RevisionStatus, options: RevisionTransitionOptions = {}): Promise<void> {
  const applied = await api.dataSource.transaction((m) => api.flow.transition(m, revisionId, to, options));
  expect(applied, `${revisionId} → ${to}`).not.toBeNull();
}

/** Hands the revision's job to Redis, then plays the deployer until it is DEPLOYED. */
async function deployImage(revisionId: string): Promise<void> {
  await api.relay.drain();
  await move(revisionId, 'DEPLOYING');
  await move(revisionId, 'DEPLOYED');
}

const getRevision = (deploymentId: string, revisionId: string) =>
  api.http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`);
const redeploy = (deploymentId: string, revisionId: string, headers?: Record<string, string>) =>
  api.http.post(`/v2/deployments/${deploymentId}/revisions/${revisionId}/redeploy`, undefined, { headers });
const interrupt = (deploymentId: string, revisionId: string) =>
  api.http.post(`/v2/deployments/${deploymentId}/revisions/${revisionId}/interruption`);

describe('GET /v2/deployments/{id}/revisions', () => {
  let d: any;
  let revs: string[];

  beforeAll(async () => {
    d = await createImage('rev-list');
    await deployImage(d.latest_revision_id);
    // r2 starts (nothing in flight), r3 and r4 queue behind it.
    const ids = [d.latest_revision_id];
    for (const tag of ['2', '3', '4']) {
      const res = await api.http.patch(`/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: `registry.example/agent:${tag}` },
      });
      ids.push(res.body.latest_revision_id);
    }
    revs = ids;
  });

  it('lists newest first in an envelope', async () => {
    const res = await api.http.get(`/v2/deployments/${d.id}/revisions`);
    expect(res.status).toBe(200);
    expect(res.body.resources.map((r: any) => [r.id, r.status])).toEqual([
      [revs[3], 'QUEUED'],
      [revs[2], 'QUEUED'],
      [revs[1], 'CREATING'],
      [revs[0], 'DEPLOYED'],
    ]);
    expect(res.body.offset).toBe(4);
    const page = await api.http.get(`/v2/deployments/${d.id}/revisions?limit=2&offset=1`);
    expect(page.body.resources.map((r: any) => r.id)).toEqual([revs[2], revs[1]]);
    expect(page.body.offset).toBe(3);
  });

  it('filters by comma-separated statuses', async () => {
    const queued = await api.http.get(`/v2/deployments/${d.id}/revisions?status=QUEUED`);
    expect(queued.body.resources.map((r: any) => r.id)).toEqual([revs[3], revs[2]]);
    const some = await api.http.get(`/v2/deployments/${d.id}/revisions?status=DEPLOYED,CREATING`);
    expect(some.body.resources.map((r: any) => r.id)).toEqual([revs[1], revs[0]]);
    const none = await api.http.get(`/v2/deployments/${d.id}/revisions?status=BUILD_FAILED`);
    expect(none.body).toEqual({ resources: [], offset: 0 });
  });

  it('a bad status → 422 at its position in the list', async () => {
    const res = await api.http.get(`/v2/deployments/${d.id}/revisions?status=QUEUED,BOGUS`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['query', 'status', 1],
          msg:
            "Input should be 'CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED', " +
            "'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED' or 'UNKNOWN'",
          type: 'enum',
        },
      ],
    });
  });

  it('unknown deployment → 404', async () => {
    const missing = randomUUID();
    const res = await api.http.get(`/v2/deployments/${missing}/revisions`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ID ${missing} not found.` });
  });
});

describe('GET /v2/deployments/{id}/revisions/{revision_id}', () => {
  it('returns every C5 field; secrets by name only', async () => {
    const d = await createImage('rev-get');
    const res = await getRevision(d.id, d.latest_revision_id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: d.latest_revision_id,
      deployment_id: d.id,
      status: 'CREATING',
      status_message: null,
      source: 'external_container',
      source_revision_config: {
        repo_ref: null,
        graph_config_path: null,
        image_uri: 'registry.example/agent:1.0.0',
        repo_commit_sha: null,
        repo_commit_message: null,
        repo_commit_author: null,
        source_tarball_path: null,
      },
      image_uri: 'registry.example/agent:1.0.0',
      image_digest: null,
      resource_spec: d.source_config.resource_spec,
      secrets: [{ name: 'API_TOKEN' }],
      secret_fingerprints: [{ name: 'API_TOKEN', fingerprint: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/) }],
      redeployed_from: null,
      trigger: 'create',
      created_by: { kind: 'api_key', id: expect.any(String), name: expect.any(String) },
      artifact_pruned_at: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(res.text).not.toContain('tok-revision-secret');
  });

  it('unknown revision, or a revision of another deployment → 404 naming the revision', async () => {
    const a = await createImage('rev-owner-a');
    const b = await createImage('rev-owner-b');
    const missing = randomUUID();
    const unknown = await getRevision(a.id, missing);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: `Revision ID ${missing} not found.` });
    const foreign = await getRevision(a.id, b.latest_revision_id);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: `Revision ID ${b.latest_revision_id} not found.` });
    // Neither redeploy nor interruption reach across deployments either.
    expect((await redeploy(a.id, b.latest_revision_id)).status).toBe(404);
    expect((await interrupt(a.id, b.latest_revision_id)).status).toBe(404);
    expect((await getRevision(b.id, b.latest_revision_id)).body.status).toBe('CREATING');
  });
});

describe('POST .../redeploy', () => {
  it('a repohost revision that never built → 400, nothing created', async () => {
    const d = await createRepohost('redeploy-unbuilt');
    await api.relay.drain();
    const res = await redeploy(d.id, d.latest_revision_id);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: `Revision ID ${d.latest_revision_id} was never built (status AWAITING_BUILD); there is no artifact to redeploy.`,
    });
    const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1`, [
      d.id,
    ]);
    expect(row.n).toBe(1);
  });

  it('an external_container revision → a new revision reusing its image, config, resources and secrets', async () => {
    const d = await createImage('redeploy-image');
    const r1 = d.latest_revision_id;
    await deployImage(r1);
    const patched = await api.http.patch(`/v2/deployments/${d.id}`, {
      source_revision_config: { image_uri: 'registry.example/agent:2.0.0' },
      source_config: { resource_spec: { cpu: 2 } },
      secrets: [{ name: 'OTHER', value: 'other-value' }],
    });
    const r2 = patched.body.latest_revision_id;
    await deployImage(r2);

    const res = await redeploy(d.id, r1);
    expect(res.status, res.text).toBe(200);
    const r3 = res.body.latest_revision_id;
    expect(r3).not.toBe(r1);
    expect(r3).not.toBe(r2);
    // r2 keeps serving until r3 is rolled out.
    expect(res.body).toMatchObject({
      active_revision_id: r2,
      source_revision_config: { image_uri: 'registry.example/agent:1.0.0' },
    });
    // The deployment's config follows the redeployed snapshot.
    expect(res.body.source_config.resource_spec.cpu).toBe(0.5);
    expect(res.body.secrets).toEqual([{ name: 'API_TOKEN', value: '********' }]);

    const old = (await getRevision(d.id, r1)).body;
    const fresh = (await getRevision(d.id, r3)).body;
    expect(fresh).toMatchObject({
      status: 'CREATING',
      redeployed_from: r1,
      image_uri: old.image_uri,
      source_revision_config: old.source_revision_config,
      resource_spec: old.resource_spec,
      secrets: [{ name: 'API_TOKEN' }],
    });
    expect(old.status).toBe('DEPLOYED');
    const [sealed] = await api.dataSource.query(`SELECT secrets_sealed FROM revisions WHERE id = $1`, [r3]);
    expect(JSON.parse(secretsCodec(api.config).open(sealed.secrets_sealed, r3))).toEqual([
      { name: 'API_TOKEN', value: 'tok-revision-secret' },
    ]);
    // No build: straight to a rollout job.
    const jobs = await api.dataSource.query(`SELECT job_name FROM outbox WHERE payload->>'revisionId' = $1`, [r3]);
    expect(jobs).toEqual([{ job_name: 'rollout.revision' }]);
  });

  it('a built repohost revision → a new revision rolled out from the same artifact, without a build', async () => {
    const d = await createRepohost('redeploy-built');
    const r1 = d.latest_revision_id;
    await api.relay.drain();
    await move(r1, 'BUILDING');
    await move(r1, 'AWAITING_DEPLOY', {
      set: { artifactRef: 'registry.local/redeploy-built@sha256:abc', imageUri: 'registry.local/redeploy-built:r1' },
    });
    await move(r1, 'DEPLOYING');
    await move(r1, 'DEPLOYED');

    const res = await redeploy(d.id, r1);
    expect(res.status, res.text).toBe(200);
    const r2 = res.body.latest_revision_id;
    const fresh = (await getRevision(d.id, r2)).body;
    expect(fresh).toMatchObject({
      redeployed_from: r1,
      image_uri: 'registry.local/redeploy-built:r1',
      source: 'repohost',
    });
    const jobs = await api.dataSource.query(`SELECT job_name FROM outbox WHERE payload->>'revisionId' = $1`, [r2]);
    expect(jobs).toEqual([{ job_name: 'rollout.revision' }]);
  });

  it('behind a revision in flight, the redeploy is QUEUED', async () => {
    const d = await createImage('redeploy-queued');
    const res = await redeploy(d.id, d.latest_revision_id);
    expect(res.status).toBe(200);
    expect((await getRevision(d.id, res.body.latest_revision_id)).body).toMatchObject({
      status: 'QUEUED',
      redeployed_from: d.latest_revision_id,
    });
  });

  it('unknown deployment or revision → 404', async () => {
    const d = await createImage('redeploy-404');
    const missing = randomUUID();
    expect((await redeploy(missing, d.latest_revision_id)).body).toEqual({
      detail: `Deployment ID ${missing} not found.`,
    });
    const res = await redeploy(d.id, missing);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Revision ID ${missing} not found.` });
  });
});

describe('POST .../interruption', () => {
  it('a CREATING revision → INTERRUPTED; the active revision keeps serving', async () => {
    const d = await createImage('interrupt-creating');
    const r1 = d.latest_revision_id;
    await deployImage(r1);
    const r2 = (await api.http.patch(`/v2/deployments/${d.id}`, { secrets: [] })).body.latest_revision_id;
    expect((await getRevision(d.id, r2)).body.status).toBe('CREATING');

    const res = await interrupt(d.id, r2);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: r2, status: 'INTERRUPTED', status_message: 'Interrupted by request.' });
    const deployment = (await api.http.get(`/v2/deployments/${d.id}`)).body;
    expect(deployment).toMatchObject({ active_revision_id: r1, latest_revision_id: r2 });
    expect((await getRevision(d.id, r1)).body.status).toBe('DEPLOYED');

    // Its job still reaches Redis, but the revision stays interrupted (the worker will skip it).
    await api.relay.drain();
    expect((await getRevision(d.id, r2)).body.status).toBe('INTERRUPTED');
  });

  it('a QUEUED revision → INTERRUPTED; the one in flight is untouched', async () => {
    const d = await createImage('interrupt-queued');
    const r2 = (await api.http.patch(`/v2/deployments/${d.id}`, { secrets: [] })).body.latest_revision_id;
    const res = await interrupt(d.id, r2);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('INTERRUPTED');
    expect((await getRevision(d.id, d.latest_revision_id)).body.status).toBe('CREATING');
  });

  it('interrupting the one in flight starts the newest queued revision and skips the older ones (C6)', async () => {
    const d = await createImage('interrupt-promote');
    const r1 = d.latest_revision_id;
    const r2 = (await api.http.patch(`/v2/deployments/${d.id}`, { secrets: [] })).body.latest_revision_id;
    const r3 = (await api.http.patch(`/v2/deployments/${d.id}`, { secrets: [] })).body.latest_revision_id;
    await api.relay.drain();
    expect((await interrupt(d.id, r1)).status).toBe(200);
    const statuses = (await api.http.get(`/v2/deployments/${d.id}/revisions`)).body.resources.map((r: any) => [
      r.id,
      r.status,
    ]);
    // r3 holds the slot now: its job is in the outbox; it leaves QUEUED when the job reaches Redis.
    expect(statuses).toEqual([
      [r3, 'QUEUED'],
      [r2, 'SKIPPED'],
      [r1, 'INTERRUPTED'],
    ]);
    const jobs = await api.dataSource.query(
      `SELECT payload->>'revisionId' AS id FROM outbox WHERE payload->>'revisionId' = ANY($1) AND sent_at IS NULL`,
      [[r1, r2, r3]],
    );
    expect(jobs).toEqual([{ id: r3 }]);
    await api.relay.drain();
    expect((await getRevision(d.id, r3)).body.status).toBe('AWAITING_DEPLOY');
    expect((await getRevision(d.id, r2)).body.status).toBe('SKIPPED');
  });

  it('a terminal revision → 400', async () => {
    const d = await createImage('interrupt-terminal');
    await deployImage(d.latest_revision_id);
    const res = await interrupt(d.id, d.latest_revision_id);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: `Revision ID ${d.latest_revision_id} is already DEPLOYED; only a revision in progress can be interrupted.`,
    });
    const again = await createImage('interrupt-twice');
    expect((await interrupt(again.id, again.latest_revision_id)).status).toBe(200);
    const twice = await interrupt(again.id, again.latest_revision_id);
    expect(twice.status).toBe(400);
    expect(twice.body).toEqual({
      detail: `Revision ID ${again.latest_revision_id} is already INTERRUPTED; only a revision in progress can be interrupted.`,
    });
  });
});
