import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
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

/** Creates a deployment of the local repository `dir` through a new local integration; returns its id and first revision. */
export async function deployRepo(http: HttpClient, reposRoot: string, dir: string, minScale: number): Promise<{ deploymentId: string; revisionId: string }> {
  const integration = await http.post('/v1/integrations/repohost', { provider: 'local', name: path.basename(dir), config: { root: reposRoot } });
  expect(integration.status, integration.text).toBe(201);
  const created = await http.post('/v2/deployments', {
    name: path.basename(dir),
    source: 'repohost',
    source_config: { integration_id: integration.body.id, repo_url: `file://${dir}`, resource_spec: { min_scale: minScale, max_scale: minScale } },
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
  /** Where the instance itself answers (its recorded address, loopback when none is recorded). */
  url: string;
}

/** The deployment's running instances, straight from the runtime's table, by port. */
export async function runningInstances(api: TestApi, deploymentId: string): Promise<Instance[]> {
  const rows: Array<Record<string, any>> = await api.dataSource.query(
    `SELECT * FROM runtime_processes WHERE deployment_id = $1 AND status = 'running' ORDER BY port`,
    [deploymentId],
  );
  return rows.map((r) => ({ pid: r.pid, port: r.port, url: `http://${r.address ?? r.host ?? '127.0.0.1'}:${r.port}` }));
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

/** Starts a control plane (see startAgentPipeline), deploys the committed repository `dir` with `minScale` instances and mints a key. */
export async function startDeployedAgent(reposRoot: string, dir: string, portBase: number, minScale: number): Promise<DeployedAgent> {
  const pipeline = await startAgentPipeline(reposRoot, portBase);
  const { http } = pipeline;
  const { deploymentId, revisionId } = await deployRepo(http, reposRoot, dir, minScale);
  const rev = await untilDone(http, deploymentId, revisionId);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  const key = await http.post('/v2/api-keys', { description: 'sdk' });
  expect(key.status, key.text).toBe(201);
  const url = (await http.get(`/v2/deployments/${deploymentId}`)).body.url;
  return { pipeline, deploymentId, url, apiKey: key.body.key };
}
