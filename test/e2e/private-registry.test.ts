import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runc } from '@slipway/runtime';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startHtpasswdRegistry, type HtpasswdRegistry } from '../support/htpasswd-registry.js';
import { buildBusyboxImage, skopeoPush, type OciImage } from '../support/oci-image.js';
import { startRegistryStand, type RegistryStand } from '../support/registry-stand.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';

/**
 * `external_container` images of a private registry on the embedded container runtime (issue
 * 20): `resource_spec.image_pull_secrets` names deployment secrets holding a Docker config JSON
 * or `user:password`. Real api, deployer, runc, and a second, plain `docker-registry` with
 * htpasswd Basic auth on loopback (SLIPWAY_OUTBOUND_ALLOW_HOSTS names 127.0.0.1, as an operator
 * would for a registry on the private network). The image is hand-built from busybox-static and
 * pushed there with skopeo `--dest-creds`; nothing is pulled from anywhere else. Needs root (the
 * sandbox), runc, skopeo, umoci and catatonit.
 */
const PORT_MIN = 35_000 + Math.floor(Math.random() * 900);
const ENV = {
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99),
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
  SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
};
const USER = 'puller';
const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const WRONG = `wrong-${randomBytes(12).toString('hex')}`;
const PAGE = '<h1>private</h1>';

let stand: RegistryStand;
let registry: HtpasswdRegistry;
let deployer: ServiceProcess;
let image: OciImage;
let imageUri: string;
let digest: string;

const api = () => stand.api;
const dockerConfig = (password: string) =>
  JSON.stringify({ auths: { [registry.address]: { auth: Buffer.from(`${USER}:${password}`).toString('base64') } } });
/** Every form the credential could leak in. */
const leaks = () => [
  PASSWORD,
  WRONG,
  Buffer.from(`${USER}:${PASSWORD}`).toString('base64'),
  Buffer.from(`${USER}:${WRONG}`).toString('base64'),
];

beforeAll(async () => {
  registry = await startHtpasswdRegistry(USER, PASSWORD);
  stand = await startRegistryStand(ENV);
  stand.api.relay.start();
  deployer = await startService(
    'deployer',
    serviceEnv(stand.api, { ...ENV, SLIPWAY_REGISTRY_PORT: String(stand.api.config.registry.port) }),
  );
  image = await buildBusyboxImage(PAGE);
  imageUri = `${registry.address}/team/web:v1`;
  // The registry refuses an anonymous push; the one with its user's credentials lands.
  expect((await skopeoPush(image, imageUri, null)).ok).toBe(false);
  const pushed = await skopeoPush(image, imageUri, `${USER}:${PASSWORD}`);
  expect(pushed.ok, pushed.output).toBe(true);
  digest = pushed.digest!;
}, 120_000);

afterAll(async () => {
  const list = (await api()?.http.get('/v2/deployments?limit=100'))?.body?.resources ?? [];
  for (const d of list) await api().http.delete(`/v2/deployments/${d.id}`);
  if (list.length) {
    const runc = new Runc(path.join(api().config.dataDir, 'runtime', 'runc'));
    await eventually(
      () => runc.list(),
      (l) => l.length === 0,
      60_000,
      500,
    ).catch(() => undefined);
  }
  await deployer?.stop();
  await stand?.close();
  await registry?.stop();
  image?.cleanup();
}, 120_000);

async function create(
  name: string,
  uri: string,
  secrets: { name: string; value: string }[],
  pullSecrets: { name: string }[],
) {
  return api().http.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: { resource_spec: { image_pull_secrets: pullSecrets } },
    source_revision_config: { image_uri: uri },
    secrets,
  });
}

async function revision(deploymentId: string, revisionId: string) {
  return (await api().http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
}

function settled(deploymentId: string, revisionId: string) {
  return eventually(
    () => revision(deploymentId, revisionId),
    (r) => ['DEPLOYED', 'DEPLOY_FAILED', 'INTERRUPTED'].includes(r.status),
    90_000,
    250,
  );
}

async function servingUrl(deploymentId: string): Promise<string> {
  const [row] = await api().dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [deploymentId]);
  return `http://127.0.0.1:${row.serving_port}`;
}

async function get(url: string): Promise<string | null> {
  return fetch(url, { signal: AbortSignal.timeout(5_000) }).then(
    (r) => (r.ok ? r.text() : null),
    () => null,
  );
}

/** Everything the API and the deploy log say about a deployment's revisions, as text. */
async function everythingSaid(deploymentId: string): Promise<string> {
  const parts = [(await api().http.get(`/v2/deployments/${deploymentId}`)).text];
  const revisions = await api().http.get(`/v2/deployments/${deploymentId}/revisions?limit=100`);
  parts.push(revisions.text);
  for (const r of revisions.body.resources) {
    parts.push((await api().http.get(`/v2/deployments/${deploymentId}/revisions/${r.id}`)).text);
    parts.push(
      (await api().http.get(`/v2/deployments/${deploymentId}/revisions/${r.id}/logs?type=deploy&limit=1000`)).text,
    );
    const rows = await api().dataSource.query(`SELECT message FROM revision_logs WHERE revision_id = $1`, [r.id]);
    parts.push(...rows.map((row: { message: string }) => row.message));
  }
  return parts.join('\n');
}

/** The environment of every running container's init (its /proc/<pid>/environ), read from runc's state. */
async function containerEnvirons(): Promise<string[]> {
  const root = path.join(api().config.dataDir, 'runtime', 'runc');
  const out: string[] = [];
  for (const { id, status } of await new Runc(root).list()) {
    if (status !== 'running') continue;
    const { init_process_pid: pid } = JSON.parse(readFileSync(path.join(root, id, 'state.json'), 'utf8')) as {
      init_process_pid: number;
    };
    out.push(readFileSync(`/proc/${pid}/environ`, 'latin1').replaceAll('\0', '\n'));
  }
  return out;
}

function expectNoCredential(text: string): void {
  for (const form of leaks()) expect(text).not.toContain(form);
}

/** A deployment serving the private image, pulled with a Docker config JSON secret. */
async function servingPrivate(name: string) {
  const res = await create(name, imageUri, [{ name: 'REGCRED', value: dockerConfig(PASSWORD) }], [{ name: 'REGCRED' }]);
  expect(res.status, res.text).toBe(201);
  const rev = await settled(res.body.id, res.body.latest_revision_id);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  const url = await servingUrl(res.body.id);
  await eventually(
    () => get(url),
    (text) => text === PAGE,
    10_000,
  );
  return { id: res.body.id as string, v1: res.body.latest_revision_id as string, url };
}

describe('external_container from a private registry (image_pull_secrets)', () => {
  it('pulls with the Docker config JSON secret the pull secret names: DEPLOYED and serving, the credential nowhere', async () => {
    const { id, v1 } = await servingPrivate('priv-ok');
    const said = await everythingSaid(id);
    expect(said).toContain('Pulled and unpacked image');
    expectNoCredential(said);
    // The secret itself is listed by name, its value masked.
    expect((await api().http.get(`/v2/deployments/${id}`)).body.secrets).toEqual([
      { name: 'REGCRED', value: '********' },
    ]);
    expect(v1).toBeTruthy();
    // The pull credential is the puller's alone: the running image's environment never has it.
    const environs = await containerEnvirons();
    expect(environs.length).toBeGreaterThan(0);
    for (const environ of environs) {
      expect(environ).toContain('DATABASE_URI=');
      expect(environ).not.toMatch(/^REGCRED=/m);
      expectNoCredential(environ);
    }
  }, 150_000);

  it("without a pull secret the anonymous pull fails with the registry's 401 cause", async () => {
    const res = await create('priv-anon', imageUri, [], []);
    expect(res.status, res.text).toBe(201);
    const rev = await settled(res.body.id, res.body.latest_revision_id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(
      /^Pulling 127\.0\.0\.1:\d+\/team\/web:v1 failed: .*(unauthorized|authentication required)/,
    );
  }, 120_000);

  it('a wrong password fails the new revision with the 401 cause; the previous one keeps serving', async () => {
    const { id, v1, url } = await servingPrivate('priv-wrong');
    const patched = await api().http.patch(`/v2/deployments/${id}`, {
      secrets: [{ name: 'REGCRED', value: dockerConfig(WRONG) }],
    });
    expect(patched.status, patched.text).toBe(200);
    const v2 = patched.body.latest_revision_id;
    expect(v2).not.toBe(v1);
    const rev = await settled(id, v2);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(/unauthorized|authentication required/);
    expect(await get(url)).toBe(PAGE);
    expect((await api().http.get(`/v2/deployments/${id}`)).body.active_revision_id).toBe(v1);
    expectNoCredential(await everythingSaid(id));
  }, 180_000);

  it('by digest: user:password works, and the unpacked private copy is never reused without the registry saying yes', async () => {
    const pinned = `${registry.address}/team/web@${digest}`;
    const ok = await create(
      'priv-digest',
      pinned,
      [{ name: 'PULL', value: `${USER}:${PASSWORD}` }],
      [{ name: 'PULL' }],
    );
    expect(ok.status, ok.text).toBe(201);
    const okRev = await settled(ok.body.id, ok.body.latest_revision_id);
    expect(okRev.status, okRev.status_message).toBe('DEPLOYED');
    // The same digest is unpacked on this machine now; a deployment without credentials gets the 401.
    const anon = await create('priv-digest-anon', pinned, [], []);
    const anonRev = await settled(anon.body.id, anon.body.latest_revision_id);
    expect(anonRev.status).toBe('DEPLOY_FAILED');
    expect(anonRev.status_message).toMatch(/unauthorized|authentication required/);
    // A wrong password is no better.
    const wrong = await create(
      'priv-digest-wrong',
      pinned,
      [{ name: 'PULL', value: JSON.stringify({ username: USER, password: WRONG }) }],
      [{ name: 'PULL' }],
    );
    const wrongRev = await settled(wrong.body.id, wrong.body.latest_revision_id);
    expect(wrongRev.status).toBe('DEPLOY_FAILED');
    expect(wrongRev.status_message).toMatch(/unauthorized|authentication required/);
    // With the right credential (the Docker config form) the unpacked copy serves, without a pull.
    const again = await create(
      'priv-digest-again',
      pinned,
      [{ name: 'REGCRED', value: dockerConfig(PASSWORD) }],
      [{ name: 'REGCRED' }],
    );
    const againRev = await settled(again.body.id, again.body.latest_revision_id);
    expect(againRev.status, againRev.status_message).toBe('DEPLOYED');
    expect(await everythingSaid(again.body.id)).toContain(
      `Image ${digest} is already unpacked on this machine; no pull.`,
    );
    for (const id of [ok.body.id, anon.body.id, wrong.body.id, again.body.id])
      expectNoCredential(await everythingSaid(id));
  }, 240_000);

  it('a pull secret naming no secret of the deployment, or one in neither format, is a 422 naming it; nothing is written', async () => {
    const before = (await api().http.get('/v2/deployments?limit=100')).body.resources.length;
    const unknown = await create(
      'priv-422',
      imageUri,
      [{ name: 'REGCRED', value: dockerConfig(PASSWORD) }],
      [{ name: 'REGCRED' }, { name: 'NOPE' }],
    );
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'source_config', 'resource_spec', 'image_pull_secrets', 1, 'name'],
        msg: expect.stringContaining("'NOPE'"),
      }),
    ]);
    const malformed = await create(
      'priv-422',
      imageUri,
      [{ name: 'REGCRED', value: 'no-colon-here' }],
      [{ name: 'REGCRED' }],
    );
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual([
      'body',
      'source_config',
      'resource_spec',
      'image_pull_secrets',
      0,
      'name',
    ]);
    expect(JSON.stringify(malformed.body)).not.toContain('no-colon-here');
    expect((await api().http.get('/v2/deployments?limit=100')).body.resources).toHaveLength(before);

    // A PATCH that would leave the pull secret dangling is refused the same way, and changes nothing.
    const res = await create(
      'priv-422-patch',
      imageUri,
      [{ name: 'REGCRED', value: dockerConfig(PASSWORD) }],
      [{ name: 'REGCRED' }],
    );
    expect(res.status, res.text).toBe(201);
    const renamed = await api().http.patch(`/v2/deployments/${res.body.id}`, {
      source_config: { resource_spec: { image_pull_secrets: [{ name: 'OTHER' }] } },
    });
    expect(renamed.status).toBe(422);
    expect(renamed.body.detail[0].loc).toEqual([
      'body',
      'source_config',
      'resource_spec',
      'image_pull_secrets',
      0,
      'name',
    ]);
    const after = (await api().http.get(`/v2/deployments/${res.body.id}`)).body;
    expect(after.latest_revision_id).toBe(res.body.latest_revision_id);
    expect(after.source_config.resource_spec.image_pull_secrets).toEqual([{ name: 'REGCRED' }]);
  }, 120_000);
});
