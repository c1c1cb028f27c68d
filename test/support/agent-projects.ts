import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { expect } from 'vitest';
import { agentFixture, commitProject, gitIn, type AgentProject } from './agent-project-files.js';
import { runnerAmong } from './agent-runs.js';
import { writeAgentArtifact } from './agent-server-host.js';
import { addRevisionOf } from './built-revision.js';
import type { HttpClient } from './http.js';
import { startPipeline, type Pipeline } from './pipeline.js';
import { eventually } from './service-process.js';
import type { TestApi } from './test-api.js';

/**
 * LangGraph.js projects (agent-project-files.ts) deployed through a pipeline (test/support/
 * pipeline.ts) as agent servers — built from local git repositories, or as pre-built artifacts
 * where a test is not about the build — and the instances serving them.
 */

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

/** One agent-server e2e file's deployment: its control plane and its serving side. */
export interface DeployedAgent {
  pipeline: Pipeline;
  api: TestApi;
  http: HttpClient;
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
  /**
   * Starts a new revision — built from a new commit, or (pre-built) a redeploy of the first
   * revision — and returns its id once it is DEPLOYING (starting instances).
   */
  redeployStarted: () => Promise<string>;
  /** Expects the revision to end DEPLOYED. */
  expectDeployed: (revisionId: string) => Promise<void>;
  /** Stops the control plane and the deployment's processes and removes the repository. */
  stop: () => Promise<void>;
}

/** How deployAgent deploys its project. */
export type AgentSource =
  /** Committed to a local git repository and built by the builder (`npm ci`, graph check, host). */
  | 'git'
  /** An `upload` deployment whose revision is pre-built (writeAgentArtifact): no builder at work. */
  | 'prebuilt';

export interface AgentDeployOptions {
  /** The first of the 1,000 instance ports the file may use. */
  portBase: number;
  minScale: number;
  /** The other `resource_spec` fields. */
  spec?: Record<string, unknown>;
  rolloutDeadlineMs?: number;
  /** Pre-built unless the test is about what the build makes. */
  source?: AgentSource;
}

/**
 * Starts a control plane (see startAgentPipeline) and deploys `project` with `minScale`
 * instances — pre-built, or from a new local repository (`source`) — expects it DEPLOYED and
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
    const fromGit = options.source === 'git';
    const repo = fromGit ? commitProject(reposRoot, project) : null;
    pipeline = await startAgentPipeline(reposRoot, options.portBase, options.rolloutDeadlineMs);
    const { api, http } = pipeline;
    const { deploymentId, revisionId } = repo
      ? await deployRepo(http, reposRoot, repo, options.minScale, options.spec)
      : await deployPrebuilt(api, project, options.minScale, options.spec);
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
      redeployStarted: () =>
        redeployStarted(http, deploymentId, () =>
          repo ? commitAndPatch(http, repo, deploymentId) : redeploy(http, deploymentId, revisionId),
        ),
      expectDeployed: (revisionId) => expectDeployed(http, deploymentId, revisionId),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * An `upload` deployment of `project` with `minScale` instances and the other `spec` fields,
 * whose first revision is pre-built (writeAgentArtifact) and handed to the deployer as a build
 * hands one over; returns its id and that revision's.
 */
async function deployPrebuilt(
  api: TestApi,
  project: AgentProject,
  minScale: number,
  spec: Record<string, unknown> = {},
): Promise<{ deploymentId: string; revisionId: string }> {
  const created = await api.http.post('/v2/deployments', {
    name: project.name,
    source: 'upload',
    source_config: { resource_spec: { min_scale: minScale, max_scale: minScale, ...spec } },
    source_revision_config: {},
  });
  expect(created.status, created.text).toBe(201);
  const deploymentId: string = created.body.id;
  const revisionId = await addRevisionOf(
    api,
    deploymentId,
    (id) => writeAgentArtifact(api.config.dataDir, id, project),
    {
      agent_server: true,
    },
  );
  return { deploymentId, revisionId };
}

/** Commits a change to the repository and PATCHes the deployment to it; returns the new revision's id. */
async function commitAndPatch(http: HttpClient, repo: string, deploymentId: string): Promise<string> {
  writeFileSync(path.join(repo, 'README.md'), `redeploy ${Date.now()}\n`);
  gitIn(repo, 'add', '-A');
  gitIn(repo, 'commit', '-q', '-m', 'redeploy');
  const res = await http.patch(`/v2/deployments/${deploymentId}`, { source_revision_config: { repo_ref: 'main' } });
  expect(res.status, res.text).toBe(200);
  return res.body.latest_revision_id;
}

/** Redeploys the revision `revisionId` of the deployment (its artifact again, no build); returns the new revision's id. */
async function redeploy(http: HttpClient, deploymentId: string, revisionId: string): Promise<string> {
  const res = await http.post(`/v2/deployments/${deploymentId}/revisions/${revisionId}/redeploy`, {});
  expect(res.status, res.text).toBe(200);
  return res.body.latest_revision_id;
}

/** Starts a new revision (`start` returns its id) and returns that id once it is DEPLOYING (starting instances). */
async function redeployStarted(http: HttpClient, deploymentId: string, start: () => Promise<string>): Promise<string> {
  const revisionId = await start();
  await eventually(
    async () => (await http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body.status,
    (s) => s === 'DEPLOYING',
    300_000,
    250,
  );
  return revisionId;
}
