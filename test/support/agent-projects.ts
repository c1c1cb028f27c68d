import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@langchain/langgraph-sdk';
import { expect } from 'vitest';
import { runnerAmong } from './agent-runs.js';
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
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  }).trim();

/** The text of `file` in test/fixtures/agent-server. */
const agentFixture = (file: string) =>
  readFileSync(fileURLToPath(new URL(`../fixtures/agent-server/${file}`, import.meta.url)), 'utf8');

/** initProject's lockfile, and its package.json's dependencies read from it (the two always agree). */
const PROJECT_LOCKFILE = agentFixture('package-lock.json');
const PROJECT_DEPENDENCIES: Record<string, string> = JSON.parse(PROJECT_LOCKFILE).packages[''].dependencies;

/**
 * A git repository `name` under `reposRoot` with a LangGraph.js project whose graph `agent` is
 * ./src/agent.ts:graph (not written or committed yet); `env` and the keys of `config` go into its graph config.
 * Its lockfile makes a redeploy of a code change reuse the first build's installed dependencies,
 * as a project locked like most real ones does.
 */
export function initProject(
  reposRoot: string,
  name: string,
  env?: Record<string, string>,
  config: Record<string, unknown> = {},
): string {
  const dir = path.join(reposRoot, name);
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({
      name,
      private: true,
      type: 'module',
      dependencies: PROJECT_DEPENDENCIES,
    }),
  );
  writeFileSync(path.join(dir, 'package-lock.json'), PROJECT_LOCKFILE);
  writeFileSync(
    path.join(dir, 'langgraph.json'),
    JSON.stringify({
      node_version: process.versions.node.split('.')[0],
      graphs: { agent: './src/agent.ts:graph' },
      dependencies: ['.'],
      ...(env ? { env } : {}),
      ...config,
    }),
  );
  return dir;
}

/** A LangGraph.js project: its files (paths in it → text, over initProject's) and initProject's `env` and `config`. */
export interface AgentProject {
  name: string;
  files: Record<string, string>;
  env?: Record<string, string>;
  config?: Record<string, unknown>;
}

/**
 * Writes `project` as the repository `project.name` under `reposRoot` (see initProject) and
 * commits it; returns its directory. A package.json of its own goes without initProject's lockfile.
 */
export function commitProject(reposRoot: string, project: AgentProject): string {
  const dir = initProject(reposRoot, project.name, project.env, project.config);
  if ('package.json' in project.files) rmSync(path.join(dir, 'package-lock.json'));
  for (const [file, text] of Object.entries(project.files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  gitIn(dir, 'add', '-A');
  gitIn(dir, 'commit', '-q', '-m', `project ${project.name}`);
  return dir;
}

/**
 * A LangGraph.js graph that stops for a human: `plan`, then `ask_human` (which calls
 * `interrupt({ question })` and records the answer), then `act`. Its state's `steps` list the
 * nodes run; see interruptedThread.
 */
export const askHumanGraph = (
  question: string,
) => `import { Annotation, END, START, StateGraph, interrupt } from '@langchain/langgraph';

const State = Annotation.Root({
  steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  answer: Annotation<unknown>(),
});

export const graph = new StateGraph(State)
  .addNode('plan', async () => ({ steps: ['plan'] }))
  .addNode('ask_human', async () => {
    const answer = interrupt({ question: ${JSON.stringify(question)} });
    return { steps: ['ask_human'], answer };
  })
  .addNode('act', async () => ({ steps: ['act'] }))
  .addEdge(START, 'plan')
  .addEdge('plan', 'ask_human')
  .addEdge('ask_human', 'act')
  .addEdge('act', END)
  .compile();
`;

/** A new thread whose run of `graph` (an askHumanGraph) stopped at `ask_human`: its id, once interrupted. */
export async function interruptedThread(client: Client, graph = 'agent'): Promise<string> {
  const threadId = (await client.threads.create()).thread_id;
  await client.runs.wait(threadId, graph, { input: { steps: ['go'] } });
  expect((await client.threads.get(threadId)).status).toBe('interrupted');
  return threadId;
}

/**
 * The slow fixture graph (test/fixtures/agent-server/slow-graph.ts) as the graph `agent` of a
 * project `name`, with run leases of 2 s (lapsed runs move quickly).
 */
export const slowAgent = (name: string): AgentProject => ({
  name,
  files: { 'src/agent.ts': agentFixture('slow-graph.ts') },
  env: { SLIPWAY_AGENT_SERVER_RUN_LEASE_MS: '2000' },
});

/** The bearer tokens the token-auth handler knows, by user. */
export const AUTH_TOKENS = { alice: 'Bearer token-alice', bob: 'Bearer token-bob' } as const;

/**
 * A project `name` behind a custom auth handler (langgraph.json `auth.path`:
 * test/fixtures/agent-server/token-auth.ts, which knows AUTH_TOKENS and gives each user only
 * their own threads and crons), whose graph `agent` appends to `ran_as` the identity its run
 * carries (test/fixtures/agent-server/whoami-graph.ts).
 */
export const tokenAuthAgent = (name: string): AgentProject => ({
  name,
  files: {
    'package.json': JSON.stringify({
      name,
      private: true,
      type: 'module',
      dependencies: {
        '@langchain/langgraph': '1.7.3',
        '@langchain/core': '1.4.0',
        '@langchain/langgraph-sdk': '1.15.0',
      },
    }),
    'src/agent.ts': agentFixture('whoami-graph.ts'),
    'src/auth.ts': agentFixture('token-auth.ts'),
  },
  config: { auth: { path: './src/auth.ts:auth' } },
});

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
  const integration = await http.post('/v1/integrations/repohost', {
    provider: 'local',
    name: path.basename(dir),
    config: { root: reposRoot },
  });
  expect(integration.status, integration.text).toBe(201);
  const created = await http.post('/v2/deployments', {
    name: path.basename(dir),
    source: 'repohost',
    source_config: {
      integration_id: integration.body.id,
      repo_url: `file://${dir}`,
      resource_spec: { min_scale: minScale, max_scale: minScale, ...spec },
    },
    source_revision_config: {},
  });
  expect(created.status, created.text).toBe(201);
  return { deploymentId: created.body.id, revisionId: created.body.latest_revision_id };
}

const FINAL = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED'];

/** The revision once it reached a final status. */
export const untilDone = (http: HttpClient, d: string, r: string) =>
  eventually(
    async () => (await http.get(`/v2/deployments/${d}/revisions/${r}`)).body,
    (x) => FINAL.includes(x.status),
    400_000,
    500,
  );

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
export async function runningInstances(
  api: TestApi,
  deploymentId: string,
  role: Instance['role'] = 'api',
): Promise<Instance[]> {
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

/**
 * The control plane of an agent-server e2e file: local repositories under `reposRoot`, instance
 * ports from `portBase` (1,000 of them), rollouts given `rolloutDeadlineMs`.
 */
export const startAgentPipeline = (
  reposRoot: string,
  portBase: number,
  rolloutDeadlineMs = 120_000,
  env: Record<string, string> = {},
): Promise<Pipeline> =>
  startPipeline({
    SLIPWAY_LOCAL_REPOS_ROOT: reposRoot,
    SLIPWAY_RUNTIME_PORT_MIN: String(portBase),
    SLIPWAY_RUNTIME_PORT_MAX: String(portBase + 999),
    SLIPWAY_ROLLOUT_DEADLINE_MS: String(rolloutDeadlineMs),
    ...env,
  });

/** Expects the revision to end DEPLOYED. */
async function expectDeployed(http: HttpClient, deploymentId: string, revisionId: string): Promise<void> {
  const rev = await untilDone(http, deploymentId, revisionId);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
}

/** One agent-server e2e file's deployment: its control plane, its repository and its serving side. */
export interface DeployedAgent {
  pipeline: Pipeline;
  api: TestApi;
  http: HttpClient;
  /** The project's repository. */
  repo: string;
  deploymentId: string;
  /** The deployment's serving URL. */
  url: string;
  /** A workspace API key for it. */
  apiKey: string;
  /** An SDK client of the serving URL, with the key. */
  client: Client;
  /** The deployment's running instances of `role` (API instances unless told). */
  instances: (role?: Instance['role']) => Promise<Instance[]>;
  /** Once `n` instances of `role` run (API instances unless told). */
  untilInstances: (n: number, role?: Instance['role']) => Promise<Instance[]>;
  /** The instance of `role` running a run (API instances unless told), seen through the serving URL (see runnerAmong). */
  runnerOf: (threadId: string, runId: string, role?: Instance['role']) => Promise<Instance>;
  /** A running API instance other than `instance`. */
  otherThan: (instance: Instance) => Promise<Instance>;
  /** Commits a change and redeploys it, once the new revision is DEPLOYING; returns its id (see redeployStarted). */
  redeployStarted: () => Promise<string>;
  /** Expects the revision to end DEPLOYED. */
  expectDeployed: (revisionId: string) => Promise<void>;
  /** Stops the control plane and the deployment's processes and removes the repository. */
  stop: () => Promise<void>;
}

export interface AgentDeployOptions {
  /** The first of the 1,000 instance ports the file may use. */
  portBase: number;
  minScale: number;
  /** The other `resource_spec` fields. */
  spec?: Record<string, unknown>;
  rolloutDeadlineMs?: number;
}

/**
 * Commits `project` to a new directory of local repositories, starts a control plane (see
 * startAgentPipeline), deploys the project with `minScale` instances, expects it DEPLOYED and
 * mints a key. A deployment that fails stops what it started.
 */
export async function deployAgent(project: AgentProject, options: AgentDeployOptions): Promise<DeployedAgent> {
  const reposRoot = mkdtempSync(path.join(tmpdir(), `slipway-${project.name}-`));
  let pipeline: Pipeline | undefined;
  const stop = async () => {
    await pipeline?.stop();
    rmSync(reposRoot, { recursive: true, force: true });
  };
  try {
    const repo = commitProject(reposRoot, project);
    pipeline = await startAgentPipeline(reposRoot, options.portBase, options.rolloutDeadlineMs);
    const { api, http } = pipeline;
    const { deploymentId, revisionId } = await deployRepo(http, reposRoot, repo, options.minScale, options.spec);
    await expectDeployed(http, deploymentId, revisionId);
    const key = await http.post('/v2/api-keys', { description: 'sdk' });
    expect(key.status, key.text).toBe(201);
    const apiKey: string = key.body.key;
    const url: string = (await http.get(`/v2/deployments/${deploymentId}`)).body.url;
    // The SDK calls the deployment at its name at the edge, resolved through the system.
    expect(url).toBe(`http://${project.name}.localhost:${api.config.edge.httpPort}`);
    const client = new Client({ apiUrl: url, apiKey });
    const instances = (role: Instance['role'] = 'api') => runningInstances(api, deploymentId, role);
    return {
      pipeline,
      api,
      http,
      repo,
      deploymentId,
      url,
      apiKey,
      client,
      instances,
      untilInstances: (n, role) =>
        eventually(
          () => instances(role),
          (list) => list.length === n,
          120_000,
          500,
        ),
      runnerOf: (threadId, runId, role) => runnerAmong(client, threadId, runId, () => instances(role)),
      otherThan: async (instance) => {
        const other = (await instances()).find((i) => i.port !== instance.port);
        expect(other, `an instance other than the one on port ${instance.port}`).toBeDefined();
        return other!;
      },
      redeployStarted: () => redeployStarted(http, repo, deploymentId),
      expectDeployed: (revisionId) => expectDeployed(http, deploymentId, revisionId),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Commits a change to the deployment's repository and redeploys it (a PATCH of its ref), once
 * the new revision is `DEPLOYING` (starting instances); returns that revision's id.
 */
async function redeployStarted(http: HttpClient, repo: string, deploymentId: string): Promise<string> {
  writeFileSync(path.join(repo, 'README.md'), `redeploy ${Date.now()}\n`);
  gitIn(repo, 'add', '-A');
  gitIn(repo, 'commit', '-q', '-m', 'redeploy');
  const res = await http.patch(`/v2/deployments/${deploymentId}`, { source_revision_config: { repo_ref: 'main' } });
  expect(res.status, res.text).toBe(200);
  const revisionId = res.body.latest_revision_id;
  await eventually(
    async () => (await http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body.status,
    (s) => s === 'DEPLOYING',
    300_000,
    250,
  );
  return revisionId;
}
