import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBusyboxImage, type OciImage } from '../support/oci-image.js';
import { startRegistryStand, type RegistryStand } from '../support/registry-stand.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';

/**
 * The published `langgraphjs deploy` CLI (@langchain/langgraph-cli 1.5.1), unchanged, on its
 * local-build path (internal_docker): create without a revision, push token, `docker login`,
 * push, PATCH with revision_source internal_docker, polling. Against a real api, registry
 * (CNCF distribution) and deployer process.
 *
 * Stand-in: there is no Docker engine on this machine, so `docker` on the CLI's PATH is
 * test/support/docker-stand-in/docker.mjs. Its "build" hands over a hand-built OCI layout
 * (busybox-static); its login makes the real token request to Slipway; its push is a real
 * skopeo push with the credentials the CLI wrote. The embedded container runtime pulls and runs
 * the image (runc, in the deployment's sandbox), and the CLI sees the deployment come up.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'node_modules/.bin/langgraphjs');
const NAME = 'cli-image-agent';
const PORT_MIN = 34_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = {
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 49),
};

let stand: RegistryStand;
let deployer: ServiceProcess;
let image: OciImage;
let work: string;

beforeAll(async () => {
  stand = await startRegistryStand(RUNTIME_ENV);
  stand.api.relay.start();
  deployer = await startService(
    'deployer',
    serviceEnv(stand.api, { ...RUNTIME_ENV, SLIPWAY_REGISTRY_PORT: String(stand.api.config.registry.port) }),
  );
  image = await buildBusyboxImage('<h1>cli</h1>');
  work = mkdtempSync(path.join(tmpdir(), 'slipway-cli-image-'));
  for (const dir of ['bin', 'home', 'project/src']) mkdirSync(path.join(work, dir), { recursive: true });
  symlinkSync(path.join(ROOT, 'test/support/docker-stand-in/docker.mjs'), path.join(work, 'bin/docker'));
  const project = path.join(work, 'project');
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: NAME, version: '1.0.0', private: true }));
  writeFileSync(path.join(project, 'src/agent.js'), `exports.graph = { name: 'agent' };\n`);
  writeFileSync(
    path.join(project, 'langgraph.json'),
    JSON.stringify({ node_version: '20', graphs: { agent: './src/agent.js:graph' }, dependencies: ['.'] }),
  );
}, 90_000);

afterAll(async () => {
  // Deleting the deployments stops their containers.
  for (const d of (await stand?.api.http.get('/v2/deployments?limit=100'))?.body?.resources ?? [])
    await stand.api.http.delete(`/v2/deployments/${d.id}`);
  await eventually(
    async () =>
      (await stand.api.dataSource.query(`SELECT count(*)::int AS n FROM runtime_processes WHERE status <> 'exited'`))[0]
        .n,
    (n) => n === 0,
    60_000,
  ).catch(() => undefined);
  await deployer?.stop();
  await stand?.close();
  image?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

function cli(args: string[], timeoutMs = 120_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI, args, {
      cwd: path.join(work, 'project'),
      env: {
        PATH: `${path.join(work, 'bin')}:${process.env.PATH ?? ''}`,
        HOME: path.join(work, 'home'),
        NO_COLOR: '1',
        LANGGRAPH_CLI_NO_ANALYTICS: '1',
        LANGSMITH_API_KEY: stand.api.adminKey,
        DOCKER_STAND_IN_LAYOUT: image.dir,
        DOCKER_STAND_IN_STATE: path.join(work, 'docker-state.json'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `langgraphjs ${args.join(' ')} did not finish\n${out.stdout}\n${out.stderr}\n${deployer.output().slice(-3000)}`,
        ),
      );
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ...out });
    });
  });
}

describe('langgraphjs deploy (local build) against Slipway', () => {
  it('creates an internal_docker deployment, gets a push token, logs in, pushes, PATCHes the digest, and the image runs', async () => {
    const run = await cli([
      'deploy',
      '--no-input',
      '--verbose',
      '--host-url',
      stand.api.baseUrl,
      '--name',
      NAME,
      '--config',
      path.join(work, 'project/langgraph.json'),
    ]);
    const explain = `exit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    const list = await stand.api.http.get(`/v2/deployments?name=${NAME}`);
    expect(list.body.resources, explain).toHaveLength(1);
    const d = list.body.resources[0];
    expect(d.source).toBe('internal_docker');
    expect(run.stdout, explain).toContain('Requesting push token');
    expect(run.stdout, explain).toContain(`Logging into ${stand.address}`);
    expect(run.stdout, explain).toContain(`Pushing image ${stand.address}/${d.id}/${NAME}:latest`);
    expect(run.stdout, explain).not.toContain('Could not resolve image digest');

    // The PATCH recorded the digest that was pushed, and the revision skipped the build.
    const revisionId = d.latest_revision_id;
    expect(revisionId, explain).toBeTruthy();
    const revision = await eventually(
      async () => (await stand.api.http.get(`/v2/deployments/${d.id}/revisions/${revisionId}`)).body,
      (r) => ['DEPLOYED', 'DEPLOY_FAILED'].includes(r.status),
      60_000,
    );
    expect(revision).toMatchObject({
      status: 'DEPLOYED',
      source: 'internal_docker',
      image_digest: image.manifestDigest,
      image_uri: `${stand.address}/${d.id}/${NAME}@${image.manifestDigest}`,
    });
    const history = await stand.api.dataSource.query(
      `SELECT to_status FROM revision_events WHERE revision_id = $1 ORDER BY id`,
      [revisionId],
    );
    expect(history.map((h: { to_status: string }) => h.to_status)).toEqual([
      'AWAITING_DEPLOY',
      'DEPLOYING',
      'DEPLOYED',
    ]);
    // The deployment serves the image's page.
    const [row] = await stand.api.dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [d.id]);
    const page = await eventually(
      // An internal_docker deployment is an agent server: its serving URL wants a workspace key.
      () =>
        fetch(`http://127.0.0.1:${row.serving_port}/`, { headers: { 'x-api-key': stand.api.adminKey } }).then(
          (r) => r.text(),
          () => '',
        ),
      (t) => t === '<h1>cli</h1>',
      20_000,
    );
    expect(page).toBe('<h1>cli</h1>');
    expect(run.code, explain).toBe(0);
  }, 180_000);

  it('on a deployment that is not internal_docker the CLI gets the 400 it matches and says why', async () => {
    const upload = await stand.api.http.post('/v2/deployments', {
      name: 'cli-upload-only',
      source: 'internal_source',
      source_config: {},
      source_revision_config: {},
    });
    expect(upload.status).toBe(201);
    const run = await cli([
      'deploy',
      '--no-input',
      '--host-url',
      stand.api.baseUrl,
      '--deployment-id',
      upload.body.id,
      '--config',
      path.join(work, 'project/langgraph.json'),
    ]);
    expect(run.code).not.toBe(0);
    expect(`${run.stdout}${run.stderr}`).toContain('was not created by');
  }, 120_000);

  it("external_container never names another deployment's repository of the built-in registry: a 422, nothing written", async () => {
    const created = await stand.api.http.post('/v2/deployments', {
      name: 'no-listener-image',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: `${stand.address}/whatever/web:v1` },
    });
    expect(created.status, created.text).toBe(422);
    expect(created.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'source_revision_config', 'image_uri'],
        msg: expect.stringContaining("another deployment's repository of the built-in registry"),
      }),
    ]);
    const listed = await stand.api.http.get('/v2/deployments?name_contains=no-listener-image');
    expect(listed.body.resources).toEqual([]);
  }, 90_000);
});
