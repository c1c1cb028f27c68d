import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey, RegistryRepository } from '@slipway/db';
import { PLATFORM_ACCOUNT, registryAnswers, registrySecrets, startRegistry } from '@slipway/registry';
import { createListener, otherWorkspaceClient } from '../support/fixtures.js';
import { buildBusyboxImage, skopeoPush, type OciImage } from '../support/oci-image.js';
import {
  startRegistryStand,
  startRegistrySupervisor,
  type RegistryStand,
  type RegistrySupervisor,
} from '../support/registry-stand.js';
import { freePort } from '../support/ports.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The built-in registry (docs/api.md, Images and the built-in registry): the real CNCF
 * distribution registry (`docker-registry`) of this file alone, with Slipway's api as its token
 * issuer; images are hand-built OCI layouts (busybox-static) pushed with skopeo. Nothing is
 * pulled from anywhere.
 */

let stand: RegistryStand;
let image: OciImage;
let other: OciImage;

beforeAll(async () => {
  stand = await startRegistryStand();
  [image, other] = await Promise.all([buildBusyboxImage('<h1>one</h1>'), buildBusyboxImage('<h1>two</h1>')]);
}, 60_000);
afterAll(async () => {
  image?.cleanup();
  other?.cleanup();
  await stand?.close();
});

const api = () => stand.api;
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());

async function createInternalDocker(name: string) {
  const res = await api().http.post('/v2/deployments', {
    name,
    source: 'internal_docker',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; latest_revision_id: string | null; source: string };
}

async function pushToken(deploymentId: string) {
  const res = await api().http.post(`/v2/deployments/${deploymentId}/push-token`);
  expect(res.status, res.text).toBe(200);
  return res.body as { token: string; registry_url: string; expires_at: string };
}

/** A token request as distribution's clients make it. */
function tokenRequest(authorization: string | null, scopes: string[] = []) {
  const query = new URLSearchParams({ service: 'slipway-registry', account: 'oauth2accesstoken' });
  for (const scope of scopes) query.append('scope', scope);
  return api().http.get(`/v2/registry/token?${query}`, { key: null, headers: authorization ? { authorization } : {} });
}

describe('internal_docker deployments and push tokens', () => {
  it('creates without a revision and answers a push token scoped to the deployment', async () => {
    const d = await createInternalDocker('img-create');
    expect(d).toMatchObject({ source: 'internal_docker', latest_revision_id: null });
    const t = await pushToken(d.id);
    expect(t.registry_url).toBe(`${stand.address}/${d.id}`);
    expect(t.token).toMatch(/^slwr_[A-Za-z0-9_-]{43}$/);
    const ttl = new Date(t.expires_at).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(3500_000);
    expect(ttl).toBeLessThanOrEqual(3600_000);
    // Only a hash is stored.
    const rows = await api().dataSource.query(
      `SELECT encode(token_hash, 'hex') AS h FROM registry_push_tokens WHERE deployment_id = $1`,
      [d.id],
    );
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(t.token);
  });

  it('push-token on a deployment that is not internal_docker: 400 with the detail the CLIs match', async () => {
    const upload = await api().http.post('/v2/deployments', {
      name: 'img-upload',
      source: 'internal_source',
      source_config: {},
      source_revision_config: {},
    });
    expect(upload.status, upload.text).toBe(201);
    const res = await api().http.post(`/v2/deployments/${upload.body.id}/push-token`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe("Push tokens are only available for 'internal_docker' source deployments");
  });

  it("pushes with the deployment's own token (skopeo, real registry)", async () => {
    const d = await createInternalDocker('img-push');
    const t = await pushToken(d.id);
    const pushed = await skopeoPush(image, `${t.registry_url}/web:v1`, `oauth2accesstoken:${t.token}`);
    expect(pushed.ok, pushed.output).toBe(true);
    expect(pushed.digest).toBe(image.manifestDigest);
  });

  it("another deployment's token cannot push to this deployment's repositories", async () => {
    const mine = await createInternalDocker('img-mine');
    const theirs = await createInternalDocker('img-theirs');
    const t = await pushToken(theirs.id);
    const pushed = await skopeoPush(image, `${stand.address}/${mine.id}/web:v1`, `oauth2accesstoken:${t.token}`);
    expect(pushed.ok).toBe(false);
    expect(pushed.output).toMatch(/denied|unauthorized|authentication required/i);
    // The token endpoint grants nothing outside the token's deployment.
    const res = await tokenRequest(basic('oauth2accesstoken', t.token), [
      `repository:${mine.id}/web:pull,push`,
      `repository:${theirs.id}/web:pull,push`,
      `repository:${theirs.id}/a/b:push`,
    ]);
    expect(res.status).toBe(200);
    expect(claimsOf(res.body.token).access).toEqual([
      { type: 'repository', name: `${theirs.id}/web`, actions: ['pull', 'push'] },
    ]);
  });

  it('an expired push token is refused, at the token endpoint and by the registry', async () => {
    const d = await createInternalDocker('img-expired');
    const t = await pushToken(d.id);
    // A registry token never outlives the push token it came from.
    await api().dataSource.query(
      `UPDATE registry_push_tokens SET expires_at = now() + interval '30 seconds' WHERE deployment_id = $1`,
      [d.id],
    );
    const short = await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${d.id}/web:push`]);
    expect(short.body.expires_in).toBeLessThanOrEqual(30);
    expect(claimsOf(short.body.token).exp - claimsOf(short.body.token).iat).toBeLessThanOrEqual(30);
    await api().dataSource.query(
      `UPDATE registry_push_tokens SET expires_at = now() - interval '1 second' WHERE deployment_id = $1`,
      [d.id],
    );
    expect((await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${d.id}/web:push`])).status).toBe(401);
    const pushed = await skopeoPush(image, `${t.registry_url}/web:v1`, `oauth2accesstoken:${t.token}`);
    expect(pushed.ok).toBe(false);
    // Refused for its credential: skopeo's words for a 401 from the token endpoint (not, say, a
    // registry that did not answer).
    expect(pushed.output).toMatch(/unable to retrieve auth token: invalid username\/password: unauthorized/);
  });

  it('without a token the registry refuses a push, and the token endpoint wants credentials', async () => {
    const d = await createInternalDocker('img-anon');
    const pushed = await skopeoPush(image, `${stand.address}/${d.id}/web:v1`, null);
    expect(pushed.ok).toBe(false);
    expect(pushed.output).toMatch(/unauthorized|authentication required|denied/i);
    expect((await tokenRequest(null, [`repository:${d.id}/web:push`])).status).toBe(401);
    // Nor is anything pulled: the registry answers 401 to a manifest read without a token.
    const pull = await fetch(`${api().config.registry.internalUrl}/v2/${d.id}/web/manifests/v1`);
    expect(pull.status).toBe(401);
    expect(pull.headers.get('www-authenticate')).toContain(`realm="${api().baseUrl}/v2/registry/token"`);
    expect((await tokenRequest(basic('oauth2accesstoken', 'slwr_not-a-token'))).status).toBe(401);
  });

  it('a docker-login-style request (no scope) gets a token the registry accepts, granting nothing', async () => {
    const d = await createInternalDocker('img-login');
    const t = await pushToken(d.id);
    const res = await tokenRequest(basic('oauth2accesstoken', t.token));
    expect(res.status, res.text).toBe(200);
    expect(res.body.access_token).toBe(res.body.token);
    const header = JSON.parse(Buffer.from(res.body.token.split('.')[0], 'base64url').toString());
    expect(header).toMatchObject({ alg: 'ES256', kid: expect.stringMatching(/^([A-Z2-7]{4}:){11}[A-Z2-7]{4}$/) });
    expect(claimsOf(res.body.token)).toMatchObject({ iss: 'slipway', aud: 'slipway-registry', access: [] });
    expect(res.body.expires_in).toBe(300);
    const base = await fetch(`${api().config.registry.internalUrl}/v2/`, {
      headers: { authorization: `Bearer ${res.body.token}` },
    });
    expect(base.status).toBe(200);
  });

  it('the platform credential gets pull of any repository, never push', async () => {
    const d = await createInternalDocker('img-platform');
    const { platformPassword } = registrySecrets(api().config);
    const res = await tokenRequest(basic(PLATFORM_ACCOUNT, platformPassword), [`repository:${d.id}/web:pull,push`]);
    expect(res.status).toBe(200);
    expect(claimsOf(res.body.token).access).toEqual([{ type: 'repository', name: `${d.id}/web`, actions: ['pull'] }]);
    expect((await tokenRequest(basic(PLATFORM_ACCOUNT, 'wrong'), [`repository:${d.id}/web:pull`])).status).toBe(401);
  });

  it('deleting the deployment revokes its push tokens', async () => {
    const d = await createInternalDocker('img-deleted');
    const t = await pushToken(d.id);
    expect((await api().http.delete(`/v2/deployments/${d.id}`)).status).toBe(204);
    expect((await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${d.id}/web:push`])).status).toBe(401);
    const [row] = await api().dataSource.query(`SELECT revoked_at FROM registry_push_tokens WHERE deployment_id = $1`, [
      d.id,
    ]);
    expect(row.revoked_at).not.toBeNull();
  });
});

describe('PATCH with revision_source internal_docker', () => {
  let deploymentId: string;
  let registryUrl: string;

  beforeAll(async () => {
    deploymentId = (await createInternalDocker('img-patch')).id;
    const t = await pushToken(deploymentId);
    registryUrl = t.registry_url;
    expect((await skopeoPush(image, `${registryUrl}/web:v1`, `oauth2accesstoken:${t.token}`)).ok).toBe(true);
    expect((await skopeoPush(other, `${registryUrl}/web:v2`, `oauth2accesstoken:${t.token}`)).ok).toBe(true);
  }, 60_000);

  const patch = (imageUri: string) =>
    api().http.patch(`/v2/deployments/${deploymentId}`, {
      revision_source: 'internal_docker',
      source_revision_config: { image_uri: imageUri },
    });

  it('by tag: the revision records the digest the tag named, and skips the build', async () => {
    const res = await patch(`${registryUrl}/web:v1`);
    expect(res.status, res.text).toBe(200);
    const revisionId = res.body.latest_revision_id;
    expect(res.body.source_revision_config.image_uri).toBe(`${registryUrl}/web:v1`);
    await api().relay.drain();
    const revision = (await api().http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
    expect(revision).toMatchObject({
      source: 'internal_docker',
      image_digest: image.manifestDigest,
      image_uri: `${registryUrl}/web@${image.manifestDigest}`,
      status: 'AWAITING_DEPLOY',
    });
    const jobs = await api().dataSource.query(`SELECT job_name FROM outbox WHERE payload->>'revisionId' = $1`, [
      revisionId,
    ]);
    expect(jobs.map((r: { job_name: string }) => r.job_name)).toEqual(['rollout.revision']);
  });

  it('by digest: the revision runs exactly that digest', async () => {
    const res = await patch(`${registryUrl}/web@${other.manifestDigest}`);
    expect(res.status, res.text).toBe(200);
    const revision = (await api().http.get(`/v2/deployments/${deploymentId}/revisions/${res.body.latest_revision_id}`))
      .body;
    expect(revision.image_digest).toBe(other.manifestDigest);
  });

  it('an unknown tag or digest, or an image outside the deployment: 422 naming image_uri, no revision', async () => {
    const before = (await api().http.get(`/v2/deployments/${deploymentId}`)).body.latest_revision_id;
    for (const uri of [
      `${registryUrl}/web:nope`,
      `${registryUrl}/web@sha256:${'0'.repeat(64)}`,
      `${registryUrl}/missing:v1`,
      `registry.example/agent:1`,
      `${stand.address}/00000000-0000-4000-8000-000000000000/web:v1`,
    ]) {
      const res = await patch(uri);
      expect(res.status, uri).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'source_revision_config', 'image_uri']);
    }
    expect((await api().http.get(`/v2/deployments/${deploymentId}`)).body.latest_revision_id).toBe(before);
  });

  it('by tag while the registry is down: 503 with Retry-After, nothing written (not the secrets either); the ' +
    'same request succeeds once it is back', async () => {
    const before = (await api().http.get(`/v2/deployments/${deploymentId}`)).body;
    const revisions = async () =>
      Number(
        (
          await api().dataSource.query(`SELECT count(*) AS n FROM revisions WHERE deployment_id = $1`, [deploymentId])
        )[0].n,
      );
    const count = await revisions();
    const body = {
      revision_source: 'internal_docker',
      source_revision_config: { image_uri: `${registryUrl}/web:v1` },
      secrets: [{ name: 'ADDED_WHILE_DOWN', value: 'x' }],
    };
    const headers = { 'idempotency-key': `registry-down-${Date.now()}` };
    await stand.registry.stop();
    try {
      const res = await api().http.patch(`/v2/deployments/${deploymentId}`, body, { headers });
      expect(res.status, res.text).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body.detail).toMatch(
        new RegExp(
          String.raw`^The built-in image registry is unavailable, so image_uri could not be resolved to a digest; ` +
            String.raw`nothing was changed\. Retry once it is back\. \(.*ECONNREFUSED`,
        ),
      );
      const after = (await api().http.get(`/v2/deployments/${deploymentId}`)).body;
      expect(after.latest_revision_id).toBe(before.latest_revision_id);
      expect(after.secrets).toEqual(before.secrets);
      expect(after.updated_at).toBe(before.updated_at);
      expect(await revisions()).toBe(count);
    } finally {
      stand.registry = await startRegistry(api().config);
    }
    // The 503 was not kept under the Idempotency-Key: the same request, sent again, is done now.
    const again = await api().http.patch(`/v2/deployments/${deploymentId}`, body, { headers });
    expect(again.status, again.text).toBe(200);
    expect(again.body.latest_revision_id).not.toBe(before.latest_revision_id);
    expect(again.body.secrets.map((s: { name: string }) => s.name)).toContain('ADDED_WHILE_DOWN');
  }, 60_000);

  it("revision_source internal_docker on another source's deployment: 400", async () => {
    const upload = await api().http.post('/v2/deployments', {
      name: 'img-upload-patch',
      source: 'upload',
      source_config: {},
      source_revision_config: {},
    });
    const res = await api().http.patch(`/v2/deployments/${upload.body.id}`, {
      revision_source: 'internal_docker',
      source_revision_config: { image_uri: `${registryUrl}/web:v1` },
    });
    expect(res.status).toBe(400);
  });
});

describe('registry bytes quota', () => {
  it('counts pushed bytes from the registry events and refuses push tokens past the quota', async () => {
    const orgAdmin = await issueApiKey(api().dataSource.manager, {
      organizationId: api().organizationId,
      workspaceId: null,
      scope: 'organization',
      role: 'admin',
    });
    const { workspaceId, client } = await otherWorkspaceClient(api(), 'quota-space');
    const created = await client.post('/v2/deployments', {
      name: 'img-quota',
      source: 'internal_docker',
      source_config: {},
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    const t = (await client.post(`/v2/deployments/${id}/push-token`)).body;
    expect((await skopeoPush(image, `${t.registry_url}/web:v1`, `oauth2accesstoken:${t.token}`)).ok).toBe(true);
    const layerAndMore = 1_000_000; // the busybox layer alone is larger
    const counted = await eventually(
      async () =>
        Number(
          (
            await api().dataSource.query(
              `SELECT coalesce(sum(size_bytes), 0) AS n FROM registry_blobs WHERE workspace_id = $1`,
              [workspaceId],
            )
          )[0].n,
        ),
      (n) => n > layerAndMore,
      20_000,
    );
    const quota = await api().http.put(
      `/v2/workspaces/${workspaceId}/quotas`,
      { registry_bytes: counted },
      { key: orgAdmin.key },
    );
    expect(quota.status, quota.text).toBe(200);
    expect(quota.body.quotas.registry_bytes).toBe(counted);
    const push = await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${id}/web:pull,push`]);
    expect(push.status).toBe(403);
    expect(push.body.detail).toContain('registry_bytes');
    // Pulling is still allowed.
    expect((await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${id}/web:pull`])).status).toBe(200);
    // The push fails at its token request, on the 403 just seen (skopeo does not show a 403's
    // body; the detail naming the quota is checked above).
    const refused = await skopeoPush(other, `${t.registry_url}/web:v2`, `oauth2accesstoken:${t.token}`);
    expect(refused.ok).toBe(false);
    expect(refused.output).toMatch(/Requesting bearer token: invalid status code from registry 403 \(Forbidden\)/);
  }, 60_000);

  it("counts what the images unpacked to on the deployer's disk, and shows it: a small push that inflates uses up the quota", async () => {
    const orgAdmin = await issueApiKey(api().dataSource.manager, {
      organizationId: api().organizationId,
      workspaceId: null,
      scope: 'organization',
      role: 'admin',
    });
    const { workspaceId, client } = await otherWorkspaceClient(api(), 'unpacked-space');
    const created = await client.post('/v2/deployments', {
      name: 'img-unpacked',
      source: 'internal_docker',
      source_config: {},
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    const t = (await client.post(`/v2/deployments/${id}/push-token`)).body;
    const pushed = await skopeoPush(image, `${t.registry_url}/web:v1`, `oauth2accesstoken:${t.token}`);
    expect(pushed.ok, pushed.output).toBe(true);
    const usage = async () =>
      (await api().http.get(`/v2/workspaces/${workspaceId}/quotas`, { key: orgAdmin.key })).body.usage;
    // The registry's notifications are recorded as they come: the layer's first, then the small
    // config and manifest. Read until the count has held for half a second with the layer in it.
    let stored = 0;
    await eventually(
      async () => {
        const before = (await usage()).registry_stored_bytes as number;
        await new Promise((resolve) => setTimeout(resolve, 500));
        return { before, after: (await usage()).registry_stored_bytes as number };
      },
      ({ before, after }) => ((stored = after), before === after && after > 1_000_000),
      20_000,
    );
    expect(await usage()).toEqual({
      registry_bytes: stored,
      registry_stored_bytes: stored,
      registry_unpacked_bytes: 0,
    });
    const quota = await api().http.put(
      `/v2/workspaces/${workspaceId}/quotas`,
      { registry_bytes: stored + 1_000_000 },
      { key: orgAdmin.key },
    );
    expect(quota.status, quota.text).toBe(200);
    // Under the quota: push granted, for PUSH_GRANT_TTL_SECONDS only (the quota is checked again
    // at each token a push fetches); a pull-only token keeps SLIPWAY_REGISTRY_TOKEN_TTL_SECONDS.
    const granted = await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${id}/web:pull,push`]);
    expect(granted.status, granted.text).toBe(200);
    expect(granted.body.expires_in).toBe(60);
    expect(claimsOf(granted.body.token).exp - claimsOf(granted.body.token).iat).toBe(60);
    expect(
      (await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${id}/web:pull`])).body.expires_in,
    ).toBe(300);
    // The deployer records what the image unpacked to (here as its ImageCache hook does, see
    // test/e2e/image-bomb.test.ts for the real one): 5 MB the compressed count does not show.
    await new RegistryRepository(api().dataSource.manager).recordUnpacked(`${id}/web`, pushed.digest!, id, 5_000_000);
    expect(await usage()).toEqual({
      registry_bytes: stored + 5_000_000,
      registry_stored_bytes: stored,
      registry_unpacked_bytes: 5_000_000,
    });
    // Only ever raised; the same image in another repository of the workspace counts once.
    await new RegistryRepository(api().dataSource.manager).recordUnpacked(`${id}/web`, pushed.digest!, id, 10);
    await new RegistryRepository(api().dataSource.manager).recordUnpacked(`${id}/copy`, pushed.digest!, id, 5_000_000);
    expect((await usage()).registry_unpacked_bytes).toBe(5_000_000);
    const push = await tokenRequest(basic('oauth2accesstoken', t.token), [`repository:${id}/web:pull,push`]);
    expect(push.status).toBe(403);
    expect(push.body.detail).toContain('registry_bytes');
    const refused = await skopeoPush(other, `${t.registry_url}/web:v2`, `oauth2accesstoken:${t.token}`);
    expect(refused.ok).toBe(false);
  }, 60_000);
});

describe('registry bytes quota, at the registry (push guard)', () => {
  const storedOf = async (workspaceId: string) =>
    Number(
      (
        await api().dataSource.query(
          `SELECT coalesce(sum(size_bytes), 0) AS n FROM registry_blobs WHERE workspace_id = $1`,
          [workspaceId],
        )
      )[0].n,
    );

  it('a push that would pass the quota midway is refused by the registry itself, even with a fresh token; what ' +
    'was refused is not counted; another workspace pushes', async () => {
    const orgAdmin = await issueApiKey(api().dataSource.manager, {
      organizationId: api().organizationId,
      workspaceId: null,
      scope: 'organization',
      role: 'admin',
    });
    const { workspaceId, client } = await otherWorkspaceClient(api(), 'guard-space');
    const created = await client.post('/v2/deployments', {
      name: 'img-guard',
      source: 'internal_docker',
      source_config: {},
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    // Room for the busybox image (about 1 MB) and a little more, not for 3 MB of noise on top.
    expect(
      (
        await api().http.put(
          `/v2/workspaces/${workspaceId}/quotas`,
          { registry_bytes: 2_500_000 },
          { key: orgAdmin.key },
        )
      ).status,
    ).toBe(200);
    const t = (await client.post(`/v2/deployments/${id}/push-token`)).body;
    const first = await skopeoPush(image, `${t.registry_url}/web:v1`, `oauth2accesstoken:${t.token}`);
    expect(first.ok, first.output).toBe(true);
    // Counted once its manifest's event is in (the last of the push).
    await eventually(
      async () =>
        (
          await api().dataSource.query(`SELECT 1 FROM registry_blobs WHERE workspace_id = $1 AND digest = $2`, [
            workspaceId,
            first.digest,
          ])
        ).length,
      (n) => n > 0,
      20_000,
    );
    const accepted = await storedOf(workspaceId);

    const big = await buildBusyboxImage('<h1>big</h1>', {
      files: { '/www/noise.bin': { data: randomBytes(3_000_000), mode: 0o644 } },
    });
    try {
      // The token endpoint grants push (the workspace is under its quota): the registry refuses the bytes.
      const fresh = (await client.post(`/v2/deployments/${id}/push-token`)).body;
      const granted = await tokenRequest(basic('oauth2accesstoken', fresh.token), [`repository:${id}/web:pull,push`]);
      expect(granted.status, granted.text).toBe(200);
      const refused = await skopeoPush(big, `${fresh.registry_url}/web:v2`, `oauth2accesstoken:${fresh.token}`);
      expect(refused.ok).toBe(false);
      expect(refused.output).toMatch(/denied: Quota exceeded: .*registry_bytes = 2500000/);

      // A chunked upload (no Content-Length) is counted as it streams and cut off at the quota.
      const bearer = { authorization: `Bearer ${granted.body.token}` };
      const registry = api().config.registry.internalUrl;
      const started = await fetch(`${registry}/v2/${id}/web/blobs/uploads/`, { method: 'POST', headers: bearer });
      expect(started.status, await started.text()).toBe(202);
      const location = new URL(started.headers.get('location')!, registry);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 8_000_000) return controller.close();
          sent += 65_536;
          controller.enqueue(randomBytes(65_536));
        },
      });
      const patched = await fetch(location, {
        method: 'PATCH',
        headers: { ...bearer, 'content-type': 'application/octet-stream' },
        body,
        duplex: 'half',
      } as RequestInit).catch((err: Error) => err);
      expect(patched).toBeInstanceOf(Response);
      const denied = patched as Response;
      expect(denied.status).toBe(403);
      const { errors } = (await denied.json()) as { errors: { code: string; message: string }[] };
      expect(errors[0].code).toBe('DENIED');
      expect(errors[0].message).toContain('registry_bytes = 2500000');

      // Nothing refused is counted: no blob of the noise's size, at most the small config blob
      // skopeo may have pushed before the layer was refused; and the manifest never arrived.
      await new Promise((r) => setTimeout(r, 1_000));
      const stored = await storedOf(workspaceId);
      expect(stored).toBeLessThanOrEqual(2_500_000);
      expect(stored - accepted).toBeLessThan(10_000);
      const large = await api().dataSource.query(
        `SELECT digest FROM registry_blobs WHERE workspace_id = $1 AND size_bytes > 2000000`,
        [workspaceId],
      );
      expect(large).toEqual([]);
      const manifest = await fetch(`${registry}/v2/${id}/web/manifests/v2`, { method: 'HEAD', headers: bearer });
      expect(manifest.status).toBe(404);

      // Another workspace, under its own quota, pushes the same image meanwhile.
      const elsewhere = await createInternalDocker('img-guard-elsewhere');
      const o = await pushToken(elsewhere.id);
      const pushed = await skopeoPush(big, `${o.registry_url}/web:v1`, `oauth2accesstoken:${o.token}`);
      expect(pushed.ok, pushed.output).toBe(true);
    } finally {
      big.cleanup();
    }
  }, 90_000);
});

describe('external_container without a listener', () => {
  it('in a workspace with listeners: 400 listing them; in one without: accepted', async () => {
    const listenerId = await createListener(api(), 'img-cluster');
    const body = {
      name: 'img-ext',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: 'registry.example/a:1' },
    };
    const res = await api().http.post('/v2/deployments', body);
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      `'source_config.listener_id' is required for workspace with available listener IDs: [${listenerId}]`,
    );
    const { client } = await otherWorkspaceClient(api(), 'no-listeners');
    const accepted = await client.post('/v2/deployments', body);
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body.source_config.listener_id).toBeNull();
  });
});

describe('list filters', () => {
  it('filters Slipway does not implement are a 422 naming them', async () => {
    const res = await api().http.get('/v2/deployments?agent_id=x&agent_environment=prod&limit=5');
    expect(res.status).toBe(422);
    expect(res.body.detail.map((i: { loc: string[] }) => i.loc)).toEqual([
      ['query', 'agent_id'],
      ['query', 'agent_environment'],
    ]);
    expect(res.body.detail[0]).toMatchObject({ type: 'extra_forbidden' });
    expect((await api().http.get('/v2/deployments?name_contains=img&limit=5')).status).toBe(200);
  });
});

describe('source names', () => {
  it('responses keep the canonical names by default; input takes both', async () => {
    const hostedIn = await api().http.post('/v2/deployments', {
      name: 'names-a',
      source: 'internal_source',
      source_config: {},
      source_revision_config: {},
    });
    expect(hostedIn.body.source).toBe('upload');
    const docker = await createInternalDocker('names-b');
    expect(docker.source).toBe('internal_docker');
  });

  it('SLIPWAY_SOURCE_NAMES=hosted answers with the hosted names, on deployments and revisions', async () => {
    const hosted = await startTestApi({ SLIPWAY_SOURCE_NAMES: 'hosted' });
    try {
      const upload = await hosted.http.post('/v2/deployments', {
        name: 'names-upload',
        source: 'upload',
        source_config: {},
        source_revision_config: {},
      });
      expect(upload.status, upload.text).toBe(201);
      expect(upload.body.source).toBe('internal_source');
      const image = await hosted.http.post('/v2/deployments', {
        name: 'names-image',
        source: 'external_container',
        source_config: {},
        source_revision_config: { image_uri: 'registry.example/a:1' },
      });
      expect(image.status, image.text).toBe(201);
      expect(image.body.source).toBe('external_docker');
      const revision = await hosted.http.get(
        `/v2/deployments/${image.body.id}/revisions/${image.body.latest_revision_id}`,
      );
      expect(revision.body.source).toBe('external_docker');
      const docker = await hosted.http.post('/v2/deployments', {
        name: 'names-docker',
        source: 'internal_docker',
        source_config: {},
        source_revision_config: {},
      });
      expect(docker.body.source).toBe('internal_docker');
      const listed = (await hosted.http.get('/v2/deployments?limit=10')).body.resources
        .map((d: { source: string }) => d.source)
        .sort();
      expect(listed).toEqual(['external_docker', 'internal_docker', 'internal_source']);
    } finally {
      await hosted.close();
    }
  });
});

describe('the registry supervisor (`npm start`)', () => {
  it('creates the signing key 0600 on first start, restarts a registry that died, and keeps the key across restarts', async () => {
    // An api of its own: a data dir where no signing key exists yet.
    const [apiPort, registryPort] = [await freePort(), await freePort()];
    const own = await startTestApi({ PORT: String(apiPort), SLIPWAY_REGISTRY_PORT: String(registryPort) });
    const keyFile = own.config.registry.signingKeyFile;
    // Up: the registry answers and the supervisor saw it answer (a kill before that is a failed
    // start, which the supervisor also restarts, but says differently).
    const up = () =>
      eventually(
        async () =>
          (await registryAnswers(own.config.registry.internalUrl)) && /registry listening/.test(supervisor!.said()),
        (ok) => ok,
        30_000,
        250,
      );
    let supervisor: RegistrySupervisor | null = null;
    try {
      expect(existsSync(keyFile)).toBe(false);
      supervisor = startRegistrySupervisor(own);
      await up();
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const key = readFileSync(keyFile, 'utf8');
      expect(key).toContain('BEGIN PRIVATE KEY');
      const created = await own.http.post('/v2/deployments', {
        name: 'img-supervised',
        source: 'internal_docker',
        source_config: { deployment_type: 'dev' },
        source_revision_config: {},
      });
      expect(created.status, created.text).toBe(201);
      const t = (await own.http.post(`/v2/deployments/${created.body.id}/push-token`)).body;
      const push = async (img: OciImage, tag: string) => {
        const pushed = await skopeoPush(img, `${t.registry_url}/web:${tag}`, `oauth2accesstoken:${t.token}`);
        expect(pushed.ok, pushed.output).toBe(true);
      };
      await push(image, 'before');

      // The registry dies (kill -9): the supervisor starts another, and a push works again.
      const first = supervisor.registryPid();
      process.kill(first, 'SIGKILL');
      await eventually(
        async () => supervisor!.said(),
        (said) => /docker-registry exited \(null\); restarting/.test(said),
        15_000,
        100,
      );
      await eventually(
        async () => (await registryAnswers(own.config.registry.internalUrl)) && supervisor!.registryPid() !== first,
        (ok) => ok,
        30_000,
        250,
      );
      await push(other, 'after-crash');
      expect(readFileSync(keyFile, 'utf8')).toBe(key);

      // The supervisor itself restarts (`npm start` again): the same key, still 0600, and a
      // registry token signed before the restart is one the new registry still trusts.
      const login = await own.http.get(
        `/v2/registry/token?service=slipway-registry&scope=${encodeURIComponent(`repository:${created.body.id}/web:pull`)}`,
        {
          key: null,
          headers: { authorization: basic('oauth2accesstoken', t.token) },
        },
      );
      expect(login.status, login.text).toBe(200);
      await supervisor.stop();
      supervisor = startRegistrySupervisor(own);
      await up();
      expect(readFileSync(keyFile, 'utf8')).toBe(key);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const manifest = await fetch(
        `${own.config.registry.internalUrl}/v2/${created.body.id}/web/manifests/after-crash`,
        {
          method: 'HEAD',
          headers: {
            authorization: `Bearer ${login.body.token}`,
            accept: 'application/vnd.oci.image.manifest.v1+json',
          },
        },
      );
      expect(manifest.status).toBe(200);
      expect(manifest.headers.get('docker-content-digest')).toBe(other.manifestDigest);
    } finally {
      await supervisor?.stop();
      await own.close();
    }
  }, 120_000);

  it('restarts a registry that died while starting, before it answered', async () => {
    // The binary dies at its first `serve` (a crash the supervisor's start sees), then is the real one.
    const dir = mkdtempSync(path.join(tmpdir(), 'registry-bin-'));
    const bin = path.join(dir, 'docker-registry');
    writeFileSync(
      bin,
      `#!/bin/sh\nif [ "$1" = serve ] && [ ! -e "${dir}/started" ]; then touch "${dir}/started"; echo 'boom at ` +
        `start' >&2; exit 3; fi\nexec docker-registry "$@"\n`,
      { mode: 0o755 },
    );
    const own = await startTestApi({ SLIPWAY_REGISTRY_PORT: String(await freePort()) });
    const supervisor = startRegistrySupervisor(own, { SLIPWAY_REGISTRY_BIN: bin });
    try {
      await eventually(
        async () => (await registryAnswers(own.config.registry.internalUrl)) && supervisor.said(),
        (said) => /registry listening/.test(said || ''),
        30_000,
        250,
      );
      expect(supervisor.said()).toMatch(/docker-registry exited before answering:\\nboom at start.*; restarting/);
      expect(existsSync(path.join(dir, 'started'))).toBe(true);
    } finally {
      await supervisor.stop();
      await own.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
