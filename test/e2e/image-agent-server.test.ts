import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHtpasswdRegistry, type HtpasswdRegistry } from '../support/htpasswd-registry.js';
import { skopeoPush } from '../support/oci-image.js';
import { RuntimeStand } from '../support/runtime-stand.js';
import { eventually } from '../support/service-process.js';

/**
 * Agent images are agent servers (issue 32): an `internal_docker` deployment (what the deploy
 * CLIs push, `langgraph build` images) and an `external_container` image whose configuration says
 * it is one (`LANGSERVE_GRAPHS` in its environment, as `langgraph build` writes it, or the label
 * `dev.slipway.agent-server=true`) are served only with a workspace key, like a built agent;
 * a plain image stays open, and `serving_auth: "none"` opens an agent image. Real api, deployer,
 * runc, the built-in registry and a second, password-protected registry on loopback (allowed by
 * SLIPWAY_OUTBOUND_ALLOW_HOSTS). Needs root (the sandbox), runc, skopeo, umoci and catatonit.
 */
const PORT_MIN = 37_000 + Math.floor(Math.random() * 900);
const runtime = new RuntimeStand({
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99),
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
  SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
});
const { image, createDeployment, deploy, settled, servingUrl, get } = runtime.helpers();
const { api } = runtime;
const USER = 'puller';
const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const GRAPHS = `LANGSERVE_GRAPHS={"agent":"/deps/app/graph.py:graph"}`;
let registry: HtpasswdRegistry;

beforeAll(async () => {
  registry = await startHtpasswdRegistry(USER, PASSWORD);
  await runtime.start();
}, 120_000);
afterAll(async () => {
  await runtime.close();
  await registry?.stop();
}, 120_000);

const NO_KEY = {};
const deploymentOf = async (id: string) => (await api().http.get(`/v2/deployments/${id}`)).body;

/** An external_container deployment of `page` pushed to the password-protected registry, DEPLOYED; its serving URL. */
async function external(
  name: string,
  page: string,
  options: Parameters<typeof image>[1],
  sourceConfig: Record<string, unknown> = {},
) {
  const uri = `${registry.address}/team/${name}:v1`;
  const pushed = await skopeoPush(await image(page, options), uri, `${USER}:${PASSWORD}`);
  expect(pushed.ok, pushed.output).toBe(true);
  const created = await api().http.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: { resource_spec: { image_pull_secrets: [{ name: 'PULL' }] }, ...sourceConfig },
    source_revision_config: { image_uri: uri },
    secrets: [{ name: 'PULL', value: `${USER}:${PASSWORD}` }],
  });
  expect(created.status, created.text).toBe(201);
  const rev = await settled(created.body.id, created.body.latest_revision_id);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  return { id: created.body.id as string, url: await servingUrl(created.body.id) };
}

/** The page with a key, once the new revision serves (the gate's policy is reused up to 10 s). */
async function keyed(url: string, page: string) {
  await eventually(
    () => get(url),
    (r) => r?.text === page,
    20_000,
  );
}

describe('agent images on the embedded container runtime', () => {
  it('an internal_docker image answers 401 without a key and 200 with one; GET /ok stays open; agent_server is true', async () => {
    const d = await createDeployment('agent-img');
    expect((await deploymentOf(d.id)).agent_server).toBe(true);
    const id = await deploy(d, await image('<h1>agent</h1>'), 'v1');
    const rev = await settled(d.id, id);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    const url = await servingUrl(d.id);
    await keyed(url, '<h1>agent</h1>');
    const open = await get(url, NO_KEY);
    expect(open?.status, open?.text).toBe(401);
    expect(open?.text).toContain('X-Api-Key');
    expect((await get(`${url}/`, { 'x-api-key': 'slw_not-a-key' }))?.status).toBe(401);
    expect((await get(`${url}/ok`, NO_KEY))?.status).toBe(200);
    const member = await api().mintKey({});
    expect((await get(url, { 'x-api-key': member }))?.text).toBe('<h1>agent</h1>');
    expect((await get(url, { authorization: `Bearer ${member}` }))?.status).toBe(200);
    expect((await deploymentOf(d.id)).agent_server).toBe(true);
  }, 180_000);

  it('serving_auth "none" opens an internal_docker image to anyone', async () => {
    const d = await createDeployment('agent-img-open');
    const id = await deploy(d, await image('<h1>open agent</h1>'), 'v1', { source_config: { serving_auth: 'none' } });
    expect((await settled(d.id, id)).status).toBe('DEPLOYED');
    const url = await servingUrl(d.id);
    await keyed(url, '<h1>open agent</h1>');
    expect((await get(url, NO_KEY))?.text).toBe('<h1>open agent</h1>');
  }, 180_000);

  it('an external_container image with LANGSERVE_GRAPHS in its environment answers 401 without a key and 200 with one', async () => {
    const { id, url } = await external('ext-agent', '<h1>ext agent</h1>', { env: ['PATH=/bin', GRAPHS] });
    await keyed(url, '<h1>ext agent</h1>');
    expect((await get(url, NO_KEY))?.status).toBe(401);
    expect((await deploymentOf(id)).agent_server).toBe(true);
  }, 180_000);

  it('an external_container image labelled dev.slipway.agent-server=true is one as well', async () => {
    const { url } = await external('ext-labelled', '<h1>labelled</h1>', {
      labels: { 'dev.slipway.agent-server': 'true' },
    });
    await keyed(url, '<h1>labelled</h1>');
    expect((await get(url, NO_KEY))?.status).toBe(401);
  }, 180_000);

  it('an agent image naming its own auth handler (LANGGRAPH_AUTH) is left to that handler', async () => {
    const { url } = await external('ext-own-auth', '<h1>own auth</h1>', {
      env: ['PATH=/bin', GRAPHS, 'LANGGRAPH_AUTH={"path":"/deps/app/auth.py:auth"}'],
    });
    await keyed(url, '<h1>own auth</h1>');
    expect((await get(url, NO_KEY))?.text).toBe('<h1>own auth</h1>');
  }, 180_000);

  it('a plain external_container image stays open; agent_server is false', async () => {
    const { id, url } = await external('ext-plain', '<h1>plain</h1>', {});
    await keyed(url, '<h1>plain</h1>');
    expect((await get(url, NO_KEY))?.text).toBe('<h1>plain</h1>');
    expect((await deploymentOf(id)).agent_server).toBe(false);
  }, 180_000);
});
