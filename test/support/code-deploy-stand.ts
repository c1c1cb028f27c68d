import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { killGroup, processesUnder } from './app-processes.js';
import { HttpClient, revisionLogLines } from './http.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from './service-process.js';
import { startTestApi, type TestApi } from './test-api.js';

const TERMINAL = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED'];

/**
 * The real api, builder and deployer as separate processes on one test database, plus a root of
 * local git repositories listed by a `local` repohost integration: apps are committed there and
 * deployed from source, as a user would.
 */
export interface CodeDeployStand {
  api: TestApi;
  /** The api process's own base URL. */
  apiUrl: string;
  http: HttpClient;
  services: { api: ServiceProcess; builder: ServiceProcess; deployer: ServiceProcess };
  /** Commits `files` to the repository `name` (created on first use); returns the commit sha. */
  commit: (name: string, files: Record<string, string>) => string;
  /** Creates a repohost deployment of repository `name`; returns its id and first revision. */
  deploy: (name: string, options?: DeployOptions) => Promise<{ deploymentId: string; revisionId: string }>;
  /** The revision once terminal. */
  untilDone: (deploymentId: string, revisionId: string, timeoutMs?: number) => Promise<any>;
  /** Every line of a revision's `build` or `deploy` log, in order. */
  logLines: (deploymentId: string, revisionId: string, type: 'build' | 'deploy') => Promise<string[]>;
  close: () => Promise<void>;
}

export interface DeployOptions {
  secrets?: Record<string, string>;
  /** `source_config.resource_spec` (memory_mb, cpu, min_scale, max_scale). */
  resourceSpec?: Record<string, number>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startCodeDeployStand(
  env: Record<string, string> = {},
  deployerEnv: Record<string, string> = {},
): Promise<CodeDeployStand> {
  const reposRoot = mkdtempSync(path.join(tmpdir(), 'slipway-repos-'));
  const portBase = 33_000 + Math.floor(Math.random() * 60) * 100;
  const common = {
    SLIPWAY_LOCAL_REPOS_ROOT: reposRoot,
    SLIPWAY_RUNTIME_PORT_MIN: String(portBase),
    SLIPWAY_RUNTIME_PORT_MAX: String(portBase + 99),
    SLIPWAY_ROLLOUT_DEADLINE_MS: '90000',
    ...env,
  };
  const api = await startTestApi(common);
  const port = await freePort();
  const started = await Promise.allSettled([
    startService(
      'api',
      serviceEnv(api, { ...common, PORT: String(port), HOST: '127.0.0.1', SLIPWAY_BOOTSTRAP_API_KEY: api.adminKey }),
    ),
    startService('builder', serviceEnv(api, common)),
    startService('deployer', serviceEnv(api, { ...common, ...deployerEnv })),
  ]);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    // Nothing of a stand that could not start keeps running (its sandboxes' network included).
    await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
    await api.close();
    rmSync(reposRoot, { recursive: true, force: true });
    throw failed.reason;
  }
  const [apiProcess, builder, deployer] = started.map((s) => (s as PromiseFulfilledResult<ServiceProcess>).value) as [
    ServiceProcess,
    ServiceProcess,
    ServiceProcess,
  ];
  const apiUrl = `http://127.0.0.1:${port}`;
  const http = new HttpClient(apiUrl, api.adminKey);
  const integration = await http.post('/v1/integrations/repohost', {
    provider: 'local',
    name: 'acme',
    config: { root: reposRoot },
  });
  if (integration.status !== 201) throw new Error(`integration: ${integration.status} ${integration.text}`);
  const integrationId: string = integration.body.id;

  const commit = (name: string, files: Record<string, string>) => {
    const repo = path.join(reposRoot, name);
    const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
    mkdirSync(repo, { recursive: true });
    execFileSync('git', ['init', '-q', '-b', 'main', repo]);
    for (const [file, text] of Object.entries(files)) writeFileSync(path.join(repo, file), text);
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '--allow-empty', '-m', `app ${name}`);
    return git('rev-parse', 'HEAD');
  };

  const deploy = async (name: string, options: DeployOptions = {}) => {
    const created = await http.post('/v2/deployments', {
      name,
      source: 'repohost',
      source_config: {
        integration_id: integrationId,
        repo_url: `file://${path.join(reposRoot, name)}`,
        build_on_push: false,
        ...(options.resourceSpec ? { resource_spec: options.resourceSpec } : {}),
      },
      source_revision_config: {},
      secrets: Object.entries(options.secrets ?? {}).map(([n, value]) => ({ name: n, value })),
    });
    if (created.status !== 201) throw new Error(`create ${name}: ${created.status} ${created.text}`);
    return { deploymentId: created.body.id as string, revisionId: created.body.latest_revision_id as string };
  };

  const untilDone = (deploymentId: string, revisionId: string, timeoutMs = 240_000) =>
    eventually(
      async () => (await http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body,
      (r) => TERMINAL.includes(r?.status),
      timeoutMs,
      300,
    );

  const logLines = (deploymentId: string, revisionId: string, type: 'build' | 'deploy') =>
    revisionLogLines(http, deploymentId, revisionId, type);

  const services = { api: apiProcess, builder, deployer };
  const close = async () => {
    // Whatever runs now: a test may have replaced a service (a restart).
    await Promise.all(Object.values(services).map((s) => s.stop()));
    for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
    await api.close();
    rmSync(reposRoot, { recursive: true, force: true });
  };

  return { api, apiUrl, http, services, commit, deploy, untilDone, logLines, close };
}

/**
 * A minimal Node app repository: `npm start` runs `server.js`. With a `langgraph.json` (an agent
 * server) unless `graphConfig` is false (a plain app).
 */
export function nodeApp(name: string, server: string, { graphConfig = true } = {}): Record<string, string> {
  return {
    'package.json': JSON.stringify({ name, version: '1.0.0', private: true, scripts: { start: 'node server.js' } }),
    ...(graphConfig
      ? {
          'langgraph.json': JSON.stringify({
            node_version: '20',
            graphs: { agent: './server.js:graph' },
            dependencies: ['.'],
          }),
        }
      : {}),
    'server.js': server,
  };
}

/**
 * The `server.js` of a small app on `PORT`: `/ok` answers `ok`, any other path a JSON object of
 * `fields`, each a JavaScript expression the app evaluates per request (`req` is the request).
 */
export function jsonServer(fields: Record<string, string>): string {
  const object = Object.entries(fields)
    .map(([name, expression]) => `${JSON.stringify(name)}: ${expression}`)
    .join(', ');
  return `require('node:http').createServer((req, res) => {
  if (req.url === '/ok') return res.end('ok');
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ ${object} }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;
}

/** Hits `url` every `everyMs` until stopped; keeps every answer that was not a 200 (status or error). */
export function keepProbing(url: string, everyMs = 50) {
  const failures: string[] = [];
  let requests = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      requests++;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
        if (res.status !== 200) failures.push(`${res.status}`);
        await res.arrayBuffer();
      } catch (err) {
        failures.push(String(err));
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return { stop: async () => ((running = false), await loop, { failures, requests }) };
}
