import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RevisionLogRepository } from '@slipway/pipeline';
import { parseUploadObjectPath } from '@slipway/source';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The published `langgraphjs deploy` CLI (@langchain/langgraph-cli 1.5.1), unchanged, against a
 * local Slipway with real builder and deployer processes: create without a revision, upload
 * URL, PUT of the tarball, PATCH with revision_source, status polling, then `deploy list`,
 * `deploy revisions list` and `deploy logs` (docs/api.md, Uploads and the deploy CLIs; Revisions).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'node_modules/.bin/langgraphjs');
const NAME = 'cli-agent';
const PORT_BASE = 40_000 + Math.floor(Math.random() * 2_000);

let api: TestApi;
let builder: ServiceProcess;
let deployer: ServiceProcess;
let project: string;
let home: string;

/** A port that is free now; the api listens on it so upload URLs (built on the public URL) reach it. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The app: zero dependencies, a `start` script, answers GET /ok on $PORT; `/` says its version. */
function writeApp(version: string): void {
  mkdirSync(path.join(project, 'src'), { recursive: true });
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify(
      { name: 'cli-agent', version: '1.0.0', private: true, scripts: { start: 'node src/server.js' } },
      null,
      2,
    ),
  );
  writeFileSync(path.join(project, 'src/agent.js'), `exports.graph = { name: 'agent' };\n`);
  writeFileSync(
    path.join(project, 'src/server.js'),
    `const http = require('node:http');
http.createServer((req, res) => res.end(req.url === '/ok' ? 'ok' ` +
      `: ${JSON.stringify(version)})).listen(Number(process.env.PORT), '127.0.0.1');
`,
  );
  writeFileSync(
    path.join(project, 'langgraph.json'),
    JSON.stringify({ node_version: '20', graphs: { agent: './src/agent.js:graph' }, dependencies: ['.'] }, null, 2),
  );
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts the CLI in the project directory with only the environment it documents. */
function spawnCli(args: string[]) {
  const child = spawn(CLI, args, {
    cwd: project,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      NO_COLOR: '1',
      LANGGRAPH_CLI_NO_ANALYTICS: '1',
      LANGSMITH_API_KEY: api.adminKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  return { child, out };
}

/** Runs the CLI to its end; bounded. */
function cli(args: string[], timeoutMs = 240_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const { child, out } = spawnCli(args);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `langgraphjs ${args.join(' ')} did not finish within ${timeoutMs} ` +
            `ms\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}\n${diagnostics()}`,
        ),
      );
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ...out });
    });
  });
}

/** What the services said, for a failure message that shows where the flow stopped. */
function diagnostics(): string {
  const tail = (s: string) => s.split('\n').slice(-40).join('\n');
  return `--- builder (tail) ---\n${tail(builder?.output() ?? '')}\n--- deployer (tail) ---\n${tail(deployer?.output() ?? '')}`;
}

/** The revisions of the deployment with their status messages and last log lines. */
async function revisionReport(deploymentId: string): Promise<string> {
  const rows = await api.dataSource.query(
    `SELECT r.id, r.status, r.status_message,
            (SELECT string_agg(l.type || ': ' || l.message, E'\n' ORDER BY l.id) FROM
               (SELECT * FROM revision_logs WHERE revision_id = r.id ORDER BY id DESC LIMIT 15) l) AS log_tail
       FROM revisions r WHERE r.deployment_id = $1 ORDER BY r.created_at`,
    [deploymentId],
  );
  return rows
    .map((r: any) => `revision ${r.id} ${r.status}: ${r.status_message}\n${r.log_tail ?? '(no log lines)'}`)
    .join('\n');
}

async function explain(r: CliResult): Promise<string> {
  const [d] = await api.dataSource.query(`SELECT id FROM deployments WHERE name = $1`, [NAME]);
  const revisions = d ? await revisionReport(d.id) : '(no deployment)';
  return `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}\n--- revisions ---\n${revisions}\n${diagnostics()}`;
}
const host = () => ['--host-url', api.baseUrl];

beforeAll(async () => {
  const port = await freePort();
  const runtime = {
    SLIPWAY_RUNTIME_PORT_MIN: String(PORT_BASE),
    SLIPWAY_RUNTIME_PORT_MAX: String(PORT_BASE + 999),
    SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
  };
  // PORT fixed, so the default public URL (http://127.0.0.1:<PORT>) is where the api listens.
  api = await startTestApi({ PORT: String(port), ...runtime });
  expect(api.baseUrl).toBe(api.config.publicUrl);
  api.relay.start();
  [builder, deployer] = await Promise.all([
    startService('builder', serviceEnv(api, runtime)),
    startService('deployer', serviceEnv(api, runtime)),
  ]);
  project = mkdtempSync(path.join(tmpdir(), 'slipway-cli-project-'));
  home = mkdtempSync(path.join(tmpdir(), 'slipway-cli-home-'));
  writeApp('v1');
}, 90_000);

afterAll(async () => {
  if (api && builder && deployer) await tearDownApps();
  await Promise.all([builder?.stop(), deployer?.stop()]);
  await api?.close();
  for (const dir of [project, home]) if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * A stopping deployer leaves its instances running (they belong to the next owner), so the
 * deployment is deleted first: its teardown stops them. Any instance of this test that still
 * runs after that (its cwd is under this test's data dir) is killed, so none outlives the run.
 */
async function tearDownApps(): Promise<void> {
  const [d] = await api.dataSource.query(`SELECT id FROM deployments WHERE name = $1`, [NAME]);
  if (d) {
    await api.http.delete(`/v2/deployments/${d.id}`);
    await eventually(
      async () => (await api.http.get(`/v2/deployments/${d.id}`)).status,
      (s) => s === 404,
      30_000,
    ).catch(() => undefined);
  }
  for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
}

describe('langgraphjs deploy (published CLI) against Slipway', () => {
  let deploymentId: string;
  let firstRevision: string;

  it('creates the deployment, uploads the source and waits until the revision is DEPLOYED', async () => {
    const run = await cli([
      'deploy',
      '--remote',
      '--no-input',
      '--verbose',
      ...host(),
      '--name',
      NAME,
      '--config',
      path.join(project, 'langgraph.json'),
    ]);
    // Read what was created first, so the later tests (list, revisions, logs) run even when the
    // rollout of this one fails.
    const list = await api.http.get(`/v2/deployments?name=${NAME}`);
    expect(list.body.resources, await explain(run)).toHaveLength(1);
    let d = list.body.resources[0];
    deploymentId = d.id;
    firstRevision = d.latest_revision_id;
    expect(run.stdout).toContain('Uploading source');
    expect(run.stdout).toContain(deploymentId);
    expect(run.code, await explain(run)).toBe(0);
    d = (await api.http.get(`/v2/deployments/${deploymentId}`)).body;
    expect(d).toMatchObject({ source: 'upload', deployment_type: 'dev', active_revision_id: firstRevision });

    const revision = (await api.http.get(`/v2/deployments/${deploymentId}/revisions/${firstRevision}`)).body;
    expect(revision.status, revision.status_message).toBe('DEPLOYED');
    expect(revision.source_revision_config.graph_config_path).toBe('langgraph.json');
    const objectPath = revision.source_revision_config.source_tarball_path;
    expect(parseUploadObjectPath(objectPath)?.deploymentId).toBe(deploymentId);
    const [upload] = await api.dataSource.query(`SELECT size_bytes, completed_at FROM uploads WHERE object_path = $1`, [
      objectPath,
    ]);
    expect(Number(upload.size_bytes)).toBeGreaterThan(0);
    expect(upload.completed_at).not.toBeNull();

    // The built app is served.
    expect(d.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await fetch(`${d.url}/ok`)).text()).toBe('ok');
    expect(await (await fetch(d.url)).text()).toBe('v1');
  }, 300_000);

  it('a second deploy finds the deployment by name and rolls out a new revision from a new upload', async () => {
    writeApp('v2');
    const run = await cli(['deploy', '--remote', '--no-input', ...host(), '--name', NAME]);
    expect(run.code, await explain(run)).toBe(0);
    expect(run.stdout).toContain(`Found existing deployment (ID: ${deploymentId})`);
    const d = (await api.http.get(`/v2/deployments/${deploymentId}`)).body;
    expect(d.latest_revision_id).not.toBe(firstRevision);
    expect(d.active_revision_id).toBe(d.latest_revision_id);
    expect(await (await fetch(d.url)).text()).toBe('v2');
    const uploads = await api.dataSource.query(
      `SELECT count(*)::int AS n FROM uploads WHERE deployment_id = $1 AND completed_at IS NOT NULL`,
      [deploymentId],
    );
    expect(uploads[0].n).toBe(2);
  }, 300_000);

  it('deploy list shows the deployment', async () => {
    const run = await cli(['deploy', 'list', ...host()], 60_000);
    expect(run.code, await explain(run)).toBe(0);
    expect(run.stdout).toMatch(/Deployment ID\s+Deployment Name\s+Deployment URL/);
    const row = run.stdout.split('\n').find((l) => l.startsWith(deploymentId));
    expect(row, run.stdout).toBeDefined();
    expect(row).toContain(NAME);
  }, 90_000);

  it('deploy revisions list shows both revisions, the newest DEPLOYED', async () => {
    const run = await cli(['deploy', 'revisions', 'list', deploymentId, ...host()], 60_000);
    expect(run.code, await explain(run)).toBe(0);
    const rows = run.stdout
      .split('\n')
      .filter((l) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\s/.test(l));
    expect(rows).toHaveLength(2);
    const latest = (await api.http.get(`/v2/deployments/${deploymentId}`)).body.latest_revision_id;
    expect(rows[0]).toMatch(new RegExp(`^${latest}\\s+DEPLOYED\\s`));
    expect(rows[1]).toMatch(new RegExp(`^${firstRevision}\\s`));
  }, 90_000);

  it('deploy logs --type build reads the build log through POST .../build_logs', async () => {
    const lines = await api.http.post(`/v1/projects/${deploymentId}/revisions/${firstRevision}/build_logs`, {
      order: 'asc',
      limit: 5,
    });
    expect(lines.body.logs.length, 'the builder wrote no build log lines').toBeGreaterThan(0);
    const run = await cli(
      ['deploy', 'logs', '--type', 'build', '--deployment-id', deploymentId, '--revision-id', firstRevision, ...host()],
      60_000,
    );
    expect(run.code, await explain(run)).toBe(0);
    expect(run.stdout).toContain(lines.body.logs[0].message);

    const deployLogs = await cli(['deploy', 'logs', '--deployment-id', deploymentId, ...host()], 60_000);
    expect(deployLogs.code, await explain(deployLogs)).toBe(0);
  }, 90_000);

  it('deploy logs --follow prints new lines of the running deployment as they are stored (start_time polling)', async () => {
    const active = (await api.http.get(`/v2/deployments/${deploymentId}`)).body.active_revision_id;
    const logs = new RevisionLogRepository(api.dataSource.manager);
    const { child, out } = spawnCli(['deploy', 'logs', '--follow', '--deployment-id', deploymentId, ...host()]);
    try {
      const printed = (marker: string) => out.stdout.split('\n').filter((l) => l.includes(marker)).length;
      // Written one at a time while the CLI polls (every 2 s): each shows up once, in order.
      for (let i = 1; i <= 3; i++) {
        const marker = `follow-marker-${i}-${Date.now()}`;
        await logs.append(active, 'deploy', [{ level: 'info', message: marker }]);
        await eventually(
          async () => printed(marker),
          (n) => n > 0,
          20_000,
          200,
        );
        expect(printed(marker), out.stdout).toBe(1);
      }
      const order = [...out.stdout.matchAll(/follow-marker-(\d)-/g)].map((m) => m[1]);
      expect(order).toEqual(['1', '2', '3']);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);
});
