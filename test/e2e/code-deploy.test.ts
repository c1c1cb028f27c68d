import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, keepProbing } from '../support/code-deploy-stand.js';
import { HttpClient } from '../support/http.js';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 4's whole flow on one machine, with api, builder and deployer as separate processes
 * and nothing remote: a local git repository holding a small Node app, a `local` integration
 * listing it, a repohost deployment built from it and served by the process runtime.
 */
const SECRET = 'code-deploy-secret-4c1e';
const PORT_BASE = 32_000 + Math.floor(Math.random() * 2_000);

let api: TestApi;
let apiProcess: ServiceProcess;
let http: HttpClient;
let builder: ServiceProcess;
let deployer: ServiceProcess;
let reposRoot: string;
let repo: string;

const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();

/** Commits a version of the app; `crash` makes it exit at start. Returns the commit sha. */
function commitApp(version: string, { crash = false } = {}): string {
  writeFileSync(
    path.join(repo, 'server.js'),
    `${crash ? "throw new Error('boom at start');\n" : ''}const http = require('node:http');
const version = ${JSON.stringify(version)};
http.createServer((req, res) => {
  if (req.url === '/ok') return res.end('ok');
  if (req.url === '/info') {
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify({ version, secret: Boolean(process.env.MY_SECRET), database: ` +
      `Boolean(process.env.DATABASE_URI), built: require('node:fs').existsSync('build.txt') }));
  }
  res.end(version);
}).listen(Number(process.env.PORT), '127.0.0.1');
`,
  );
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', `app ${version}`);
  return git('rev-parse', 'HEAD');
}

beforeAll(async () => {
  reposRoot = mkdtempSync(path.join(tmpdir(), 'slipway-repos-'));
  repo = path.join(reposRoot, 'support-agent');
  mkdirSync(repo);
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  writeFileSync(
    path.join(repo, 'package.json'),
    JSON.stringify({
      name: 'support-agent',
      version: '1.0.0',
      private: true,
      scripts: { start: 'node server.js', build: "node -e \"require('fs').writeFileSync('build.txt','built')\"" },
    }),
  );
  writeFileSync(
    path.join(repo, 'langgraph.json'),
    JSON.stringify({ node_version: '20', graphs: { agent: './server.js:graph' }, dependencies: ['.'] }),
  );
  commitApp('v1');

  const env = {
    SLIPWAY_LOCAL_REPOS_ROOT: reposRoot,
    SLIPWAY_RUNTIME_PORT_MIN: String(PORT_BASE),
    SLIPWAY_RUNTIME_PORT_MAX: String(PORT_BASE + 999),
    SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
  };
  // The harness gives this file its database, queue prefix and keys; the api under test runs as
  // its own process on top of them, like the builder and the deployer.
  api = await startTestApi(env);
  const port = await freePort();
  [apiProcess, builder, deployer] = await Promise.all([
    startService(
      'api',
      serviceEnv(api, { ...env, PORT: String(port), HOST: '127.0.0.1', SLIPWAY_BOOTSTRAP_API_KEY: api.adminKey }),
    ),
    startService('builder', serviceEnv(api, env)),
    startService('deployer', serviceEnv(api, env)),
  ]);
  http = new HttpClient(`http://127.0.0.1:${port}`, api.adminKey);
}, 90_000);

afterAll(async () => {
  await Promise.all([apiProcess?.stop(), builder?.stop(), deployer?.stop()]);
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
  rmSync(reposRoot, { recursive: true, force: true });
});

const revisionOf = async (d: string, r: string) => (await http.get(`/v2/deployments/${d}/revisions/${r}`)).body;
const untilDone = (d: string, r: string) =>
  eventually(
    () => revisionOf(d, r),
    (x) => ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED'].includes(x.status),
    120_000,
    250,
  );
const info = async (url: string) =>
  (await (await fetch(`${url}/info`)).json()) as {
    version: string;
    secret: boolean;
    database: boolean;
    built: boolean;
  };

describe('code deploys: repohost → build → process runtime', () => {
  let deploymentId: string;
  let firstRevision: string;
  let url: string;

  it('lists the repository through a local integration and deploys it', async () => {
    const integration = await http.post('/v1/integrations/repohost', {
      provider: 'local',
      name: 'acme',
      config: { root: reposRoot },
    });
    expect(integration.status, integration.text).toBe(201);
    const repos = await http.get(`/v1/integrations/repohost/${integration.body.id}/repos`);
    expect(repos.status).toBe(200);
    const entry = repos.body.find((r: any) => r.name === 'support-agent');
    expect(entry).toMatchObject({
      host_integration_id: integration.body.id,
      owner: 'acme',
      default_branch: 'main',
      url: `file://${repo}`,
    });

    const created = await http.post('/v2/deployments', {
      name: 'support-agent',
      source: 'repohost',
      source_config: { integration_id: entry.host_integration_id, repo_url: entry.url, build_on_push: true },
      source_revision_config: {},
      secrets: [{ name: 'MY_SECRET', value: SECRET }],
    });
    expect(created.status, created.text).toBe(201);
    deploymentId = created.body.id;
    firstRevision = created.body.latest_revision_id;
    expect(created.body.source_revision_config.repo_ref).toBe('main');

    const rev = await untilDone(deploymentId, firstRevision);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(rev.source_revision_config.repo_commit_sha).toBe(git('rev-parse', 'HEAD'));
    const d = (await http.get(`/v2/deployments/${deploymentId}`)).body;
    expect(d.active_revision_id).toBe(firstRevision);
    url = d.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await info(url)).toEqual({ version: 'v1', secret: true, database: true, built: true });
  });

  it('rolls a new commit out with zero failed requests during the switch', async () => {
    const sha = commitApp('v2');
    const p = keepProbing(`${url}/ok`, 20);
    const res = await http.patch(`/v2/deployments/${deploymentId}`, { source_revision_config: { repo_ref: 'main' } });
    expect(res.status).toBe(200);
    const rev = await untilDone(deploymentId, res.body.latest_revision_id);
    await new Promise((r) => setTimeout(r, 500));
    const { failures, requests } = await p.stop();
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(rev.source_revision_config.repo_commit_sha).toBe(sha);
    expect(requests).toBeGreaterThan(20);
    expect(failures).toEqual([]);
    expect((await info(url)).version).toBe('v2');
  });

  it('ends DEPLOY_FAILED for an app that crashes at start while the old version keeps answering', async () => {
    commitApp('v3', { crash: true });
    const res = await http.patch(`/v2/deployments/${deploymentId}`, { source_revision_config: { repo_ref: 'main' } });
    const rev = await untilDone(deploymentId, res.body.latest_revision_id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain('boom at start');
    expect((await info(url)).version).toBe('v2');
  });

  it('redeploys the first revision without a rebuild and serves v1 again', async () => {
    const buildsBefore = await api.dataSource.query(
      `SELECT count(*)::int AS n FROM revision_events WHERE to_status = 'BUILDING'`,
    );
    const res = await http.post(`/v2/deployments/${deploymentId}/revisions/${firstRevision}/redeploy`);
    expect(res.status).toBe(200);
    const rev = await untilDone(deploymentId, res.body.latest_revision_id);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(rev.redeployed_from).toBe(firstRevision);
    const buildsAfter = await api.dataSource.query(
      `SELECT count(*)::int AS n FROM revision_events WHERE to_status = 'BUILDING'`,
    );
    expect(buildsAfter[0].n).toBe(buildsBefore[0].n);
    expect((await info(url)).version).toBe('v1');
  });

  it("serves a running build's log lines through both log endpoints, secret values masked", async () => {
    const res = await http.post('/v2/deployments', {
      name: 'slow-build',
      source: 'repohost',
      source_config: {
        integration_id: (await http.get('/v1/integrations/repohost')).body.resources[0].id,
        repo_url: `file://${repo}`,
        build_command: 'echo "token=$MY_SECRET" && sleep 20',
      },
      source_revision_config: {},
      secrets: [{ name: 'MY_SECRET', value: SECRET }],
    });
    expect(res.status, res.text).toBe(201);
    const { id, latest_revision_id: rev } = res.body;
    const v2 = await eventually(
      async () => (await http.get(`/v2/deployments/${id}/revisions/${rev}/logs?type=build&order=asc&limit=1000`)).body,
      (b) => b.logs?.some((l: any) => l.message.startsWith('token=')),
      60_000,
      250,
    );
    // Still building: the lines are read while the build runs.
    expect((await revisionOf(id, rev)).status).toBe('BUILDING');
    expect(v2.logs.find((l: any) => l.message.startsWith('token=')).message).toBe('token=********');
    const v1 = await http.post(`/v1/projects/${id}/revisions/${rev}/build_logs`, { limit: 1000, order: 'asc' });
    expect(v1.status).toBe(200);
    expect(v1.body.logs.map((l: any) => l.message)).toContain('token=********');
    expect(JSON.stringify(v1.body) + JSON.stringify(v2)).not.toContain(SECRET);
    const stop = await http.post(`/v2/deployments/${id}/revisions/${rev}/interruption`);
    expect(stop.body.status).toBe('INTERRUPTED');
  }, 90_000);

  it('keeps secret values out of logs, build logs and job payloads', async () => {
    expect(api.logs.text()).not.toContain(SECRET);
    expect(apiProcess.output()).not.toContain(SECRET);
    expect(builder.output()).not.toContain(SECRET);
    expect(deployer.output()).not.toContain(SECRET);
    const logs = await api.dataSource.query(`SELECT message FROM revision_logs WHERE message LIKE $1`, [`%${SECRET}%`]);
    expect(logs).toEqual([]);
    const payloads = await api.dataSource.query(`SELECT payload::text AS p FROM outbox WHERE payload::text LIKE $1`, [
      `%${SECRET}%`,
    ]);
    expect(payloads).toEqual([]);
  });

  it("delete stops the app and removes its files (artifacts, its builds' npm cache)", async () => {
    const revisions: Array<{ id: string }> = await api.dataSource.query(
      `SELECT id FROM revisions WHERE deployment_id = $1`,
      [deploymentId],
    );
    const cache = path.join(api.config.dataDir, 'cache', 'npm', deploymentId);
    expect(existsSync(cache)).toBe(true);
    expect((await http.delete(`/v2/deployments/${deploymentId}`)).status).toBe(204);
    await eventually(
      async () => (await http.get(`/v2/deployments/${deploymentId}`)).status,
      (s) => s === 404,
      30_000,
    );
    await expect(fetch(`${url}/ok`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();
    expect(existsSync(cache)).toBe(false);
    for (const r of revisions) expect(existsSync(path.join(api.config.dataDir, 'artifacts', r.id))).toBe(false);
  });
});
