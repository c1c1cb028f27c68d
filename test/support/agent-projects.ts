import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { HttpClient } from './http.js';
import { startPipeline, type Pipeline } from './pipeline.js';
import { eventually } from './service-process.js';
import type { TestApi } from './test-api.js';

/**
 * LangGraph.js projects in local git repositories, deployed through a pipeline (test/support/
 * pipeline.ts) as agent servers, and the instances serving them.
 */

/** Runs git in `dir` with a fixed identity; returns trimmed stdout. */
export const gitIn = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' }).trim();

/**
 * A git repository `name` under `reposRoot` with a LangGraph.js project whose graph `agent` is
 * ./src/agent.ts:graph (not written or committed yet); `env` and the keys of `config` go into its graph config.
 */
export function initProject(reposRoot: string, name: string, env?: Record<string, string>, config: Record<string, unknown> = {}): string {
  const dir = path.join(reposRoot, name);
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name, private: true, type: 'module', dependencies: { '@langchain/langgraph': '1.7.3', '@langchain/core': '1.4.0' } }),
  );
  writeFileSync(
    path.join(dir, 'langgraph.json'),
    JSON.stringify({ node_version: process.versions.node.split('.')[0], graphs: { agent: './src/agent.ts:graph' }, dependencies: ['.'], ...(env ? { env } : {}), ...config }),
  );
  return dir;
}

/**
 * A repository `name` in a new directory of local repositories, with the slow fixture graph
 * (test/fixtures/agent-server/slow-graph.ts) committed as its graph `agent`, and run leases of
 * 2 s (lapsed runs move quickly).
 */
export function initSlowAgent(name: string): { reposRoot: string; repo: string } {
  const reposRoot = mkdtempSync(path.join(tmpdir(), `slipway-${name}-`));
  const repo = initProject(reposRoot, name, { SLIPWAY_AGENT_SERVER_RUN_LEASE_MS: '2000' });
  copyFileSync(fileURLToPath(new URL('../fixtures/agent-server/slow-graph.ts', import.meta.url)), path.join(repo, 'src/agent.ts'));
  gitIn(repo, 'add', '-A');
  gitIn(repo, 'commit', '-q', '-m', 'slow graph');
  return { reposRoot, repo };
}

/**
 * Creates a deployment of the local repository `dir` through a new local integration, with
 * `minScale` instances and the other `spec` fields; returns its id and first revision.
 */
export async function deployRepo(
  http: HttpClient,
  reposRoot: string,
  dir: string,
  minScale: number,
  spec: Record<string, unknown> = {},
): Promise<{ deploymentId: string; revisionId: string }> {
  const integration = await http.post('/v1/integrations/repohost', { provider: 'local', name: path.basename(dir), config: { root: reposRoot } });
  expect(integration.status, integration.text).toBe(201);
  const created = await http.post('/v2/deployments', {
    name: path.basename(dir),
    source: 'repohost',
    source_config: { integration_id: integration.body.id, repo_url: `file://${dir}`, resource_spec: { min_scale: minScale, max_scale: minScale, ...spec } },
    source_revision_config: {},
  });
  expect(created.status, created.text).toBe(201);
  return { deploymentId: created.body.id, revisionId: created.body.latest_revision_id };
}

const FINAL = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED'];

/** The revision once it reached a final status. */
export const untilDone = (http: HttpClient, d: string, r: string) =>
  eventually(async () => (await http.get(`/v2/deployments/${d}/revisions/${r}`)).body, (x) => FINAL.includes(x.status), 400_000, 500);

export interface Instance {
  pid: number;
  port: number;
  /** An API instance or a queue worker. */
  role: 'api' | 'queue';
  revisionId: string;
  logPath: string;
  /** Where the instance itself answers (its recorded address, loopback when none is recorded). */
  url: string;
}

/** The deployment's running instances of `role` (API instances unless told), straight from the runtime's table, by port. */
export async function runningInstances(api: TestApi, deploymentId: string, role: Instance['role'] = 'api'): Promise<Instance[]> {
  const rows: Array<Record<string, any>> = await api.dataSource.query(
    `SELECT * FROM runtime_processes WHERE deployment_id = $1 AND status = 'running' AND role = $2 ORDER BY port`,
    [deploymentId, role],
  );
  return rows.map((r) => ({
    pid: r.pid,
    port: r.port,
    role: r.role,
    revisionId: r.revision_id,
    logPath: r.log_path,
    url: `http://${r.address ?? r.host ?? '127.0.0.1'}:${r.port}`,
  }));
}

/** The control plane of an agent-server e2e file: local repositories under `reposRoot`, instance ports from `portBase` (1,000 of them). */
export const startAgentPipeline = (reposRoot: string, portBase: number): Promise<Pipeline> =>
  startPipeline({
    SLIPWAY_LOCAL_REPOS_ROOT: reposRoot,
    SLIPWAY_RUNTIME_PORT_MIN: String(portBase),
    SLIPWAY_RUNTIME_PORT_MAX: String(portBase + 999),
    SLIPWAY_ROLLOUT_DEADLINE_MS: '120000',
  });

export interface DeployedAgent {
  pipeline: Pipeline;
  deploymentId: string;
  /** The deployment's serving URL. */
  url: string;
  /** A workspace API key for it. */
  apiKey: string;
}

/**
 * Starts a control plane (see startAgentPipeline), deploys the committed repository `dir` with
 * `minScale` instances (and the other `spec` fields) and mints a key.
 */
export async function startDeployedAgent(reposRoot: string, dir: string, portBase: number, minScale: number, spec: Record<string, unknown> = {}): Promise<DeployedAgent> {
  const pipeline = await startAgentPipeline(reposRoot, portBase);
  const { http } = pipeline;
  const { deploymentId, revisionId } = await deployRepo(http, reposRoot, dir, minScale, spec);
  const rev = await untilDone(http, deploymentId, revisionId);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  const key = await http.post('/v2/api-keys', { description: 'sdk' });
  expect(key.status, key.text).toBe(201);
  const url = (await http.get(`/v2/deployments/${deploymentId}`)).body.url;
  return { pipeline, deploymentId, url, apiKey: key.body.key };
}

/**
 * Commits a change to the deployment's repository and redeploys it (a PATCH of its ref), once
 * the new revision is `DEPLOYING` (starting instances); returns that revision's id.
 */
export async function redeployStarted(http: HttpClient, repo: string, deploymentId: string): Promise<string> {
  writeFileSync(path.join(repo, 'README.md'), `redeploy ${Date.now()}\n`);
  gitIn(repo, 'add', '-A');
  gitIn(repo, 'commit', '-q', '-m', 'redeploy');
  const res = await http.patch(`/v2/deployments/${deploymentId}`, { source_revision_config: { repo_ref: 'main' } });
  expect(res.status, res.text).toBe(200);
  const revisionId = res.body.latest_revision_id;
  await eventually(async () => (await http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body.status, (s) => s === 'DEPLOYING', 300_000, 250);
  return revisionId;
}
