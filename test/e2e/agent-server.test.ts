import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import type { Run } from 'langsmith/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitProject, gitIn, initProject } from '../support/agent-project-files.js';
import {
  deployRepo as deploy,
  runningInstances,
  startAgentPipeline,
  untilDone as done,
} from '../support/agent-projects.js';
import { revisionLogLines, type HttpClient } from '../support/http.js';
import { LANGSMITH_STAND_IN, langsmithClient, standInRequests } from '../support/langsmith.js';
import { eventually } from '../support/service-process.js';
import type { Pipeline } from '../support/pipeline.js';
import { freeTestNetwork, startTestHost, type TestHost } from '../support/test-netns.js';
import type { TestApi } from '../support/test-api.js';

/**
 * Issue 9's whole flow: a plain LangGraph.js project (a two-node StateGraph, no server of its
 * own; its second node calls a fake chat model that reports token usage, standing in for a
 * provider's model) in a local git repository, deployed by real api, builder and deployer
 * processes and called with the official SDK through the deployment's serving URL. Issue 34:
 * with no tracing configuration at all, every run lands in the deployment's tracing project,
 * read back with the official `langsmith` client; with a LangSmith key of the user's own, runs go
 * to their LangSmith too (a stand-in: an HTTP server in a network namespace of its own, on a
 * TEST-NET-2 address the sandbox is told to allow, since a remote service cannot exist here). The
 * builds install @langchain/langgraph (the project's) and the agent server's locked dependencies
 * from the npm registry, so this file takes minutes.
 */
const PORT_BASE = 34_000 + Math.floor(Math.random() * 2_000);

let pipeline: Pipeline;
let api: TestApi;
let http: HttpClient;
let reposRoot: string;
let repo: string;
/** The user's own LangSmith. */
let ownLangsmith: TestHost;

const git = (...args: string[]) => gitIn(repo, ...args);

/**
 * The graph: `first` then `second`, each appending its name (and the version's tag) to `steps`;
 * `first` throws on a 'boom' step, `second` asks a fake chat model (11 tokens in, 4 out).
 */
function commitGraph(tag: string): string {
  writeFileSync(
    path.join(repo, 'src/agent.ts'),
    `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';

class FakeUsageModel extends BaseChatModel {
  _llmType() {
    return 'fake-usage';
  }
  async _generate() {
    const message = new AIMessage({ content: 'pong', usage_metadata: { input_tokens: 11, output_tokens: 4, total_tokens: 15 } });
    return { generations: [{ text: 'pong', message }] };
  }
}
const model = new FakeUsageModel({});

const State = Annotation.Root({
  steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export const graph = new StateGraph(State)
  .addNode('first', async (state) => {
    if (state.steps.includes('boom')) throw new Error('boom requested');
    return { steps: ['first${tag}'] };
  })
  .addNode('second', async () => {
    await model.invoke('ping');
    return { steps: ['second${tag}'] };
  })
  .addEdge(START, 'first')
  .addEdge('first', 'second')
  .addEdge('second', END)
  .compile();
`,
  );
  git('add', '-A');
  git('commit', '-q', '-m', `graph ${tag || 'v1'}`);
  return git('rev-parse', 'HEAD');
}

beforeAll(async () => {
  reposRoot = mkdtempSync(path.join(tmpdir(), 'slipway-agents-'));
  repo = initProject(reposRoot, 'list-agent');
  commitGraph('');

  ownLangsmith = await startTestHost(await freeTestNetwork('198.51.100'), 8080, LANGSMITH_STAND_IN);
  pipeline = await startAgentPipeline(reposRoot, PORT_BASE, undefined, {
    SLIPWAY_SANDBOX_ALLOW_CIDRS: '198.51.100.0/24',
  });
  ({ api, http } = pipeline);
}, 90_000);

afterAll(async () => {
  await pipeline?.stop();
  await ownLangsmith?.close();
  rmSync(reposRoot, { recursive: true, force: true });
}, 120_000);

const deployRepo = (dir: string, minScale: number) => deploy(http, reposRoot, dir, minScale);
const untilDone = (d: string, r: string) => done(http, d, r);

/** The root runs of `project` (a deployment's name) on `thread`, newest first, as the langsmith client lists them. */
async function rootRunsOn(key: string, project: string, thread: string): Promise<Run[]> {
  const runs: Run[] = [];
  for await (const run of langsmithClient(api.baseUrl, key).listRuns({ projectName: project, isRoot: true })) {
    if (run.extra?.metadata?.thread_id === thread) runs.push(run);
  }
  return runs;
}

describe('agent servers: a LangGraph.js project served through the LangGraph Server API', () => {
  let deploymentId: string;
  let deploymentName: string;
  let firstRevision: string;
  let url: string;
  let client: Client;
  let workspaceKey: string;
  let threadId: string;
  let assistantId: string;
  let stateBefore: unknown;
  let historyBefore: unknown[];

  it('builds and deploys a project that has graphs and no server of its own', async () => {
    const created = await deployRepo(repo, 2);
    deploymentId = created.deploymentId;
    firstRevision = created.revisionId;
    const rev = await untilDone(deploymentId, created.revisionId);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    const deployment = (await http.get(`/v2/deployments/${deploymentId}`)).body;
    url = deployment.url;
    deploymentName = deployment.name;
    // Served by the platform's agent server (no start script of its own): the resource says so.
    expect(deployment.agent_server).toBe(true);
    expect((await fetch(`${url}/ok`)).status).toBe(200);
    const key = await http.post('/v2/api-keys', { description: 'sdk' });
    expect(key.status, key.text).toBe(201);
    workspaceKey = key.body.key;
    client = new Client({ apiUrl: url, apiKey: workspaceKey });
  }, 420_000);

  it('requires a workspace API key at the serving URL', async () => {
    const search = (headers: Record<string, string>) =>
      fetch(`${url}/assistants/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: '{}',
      });
    const without = await search({});
    expect(without.status).toBe(401);
    expect(await without.json()).toEqual({
      detail: "This deployment requires an API key of its workspace in the 'X-Api-Key' header.",
    });
    expect((await search({ 'x-api-key': 'slw_not-a-key-of-anyone' })).status).toBe(401);
    // A listener agent's key belongs to the workspace but opens only the agent protocol.
    const listener = await http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'serving-auth-check',
      compute_config: { k8s_namespaces: null },
    });
    expect(listener.status, listener.text).toBe(201);
    const listenerKey = await http.post('/v2/api-keys', { description: 'agent', listener_id: listener.body.id });
    expect(listenerKey.status, listenerKey.text).toBe(201);
    expect((await search({ 'x-api-key': listenerKey.body.key })).status).toBe(401);
    const withKey = await search({ 'x-api-key': workspaceKey });
    expect(withKey.status).toBe(200);
    expect(((await withKey.json()) as unknown[])[0]).toMatchObject({ graph_id: 'agent' });
    // Health needs no key.
    expect((await fetch(`${url}/ok`)).status).toBe(200);
    // A browser's CORS preflight carries no key by design: the server answers its CORS policy, so
    // a page elsewhere (LangGraph Studio) can send the keyed request. An OPTIONS that is no preflight is refused.
    const preflight = await fetch(`${url}/assistants/search`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://smith.langchain.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-api-key',
      },
    });
    expect(preflight.status).toBeLessThan(300);
    expect(preflight.headers.get('access-control-allow-origin')).toMatch(/^(\*|https:\/\/smith\.langchain\.com)$/);
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-api-key');
    expect((await fetch(`${url}/assistants/search`, { method: 'OPTIONS' })).status).toBe(401);
  });

  it('finds the graph assistant, runs a thread to completion and streams the node updates in order', async () => {
    const assistants = await client.assistants.search({ graphId: 'agent' });
    expect(assistants).toHaveLength(1);
    assistantId = assistants[0]!.assistant_id;
    expect(assistants[0]).toMatchObject({ graph_id: 'agent', name: 'agent' });

    const thread = await client.threads.create({ metadata: { owner: 'e2e' } });
    threadId = thread.thread_id;
    expect(await client.runs.wait(threadId, assistantId, { input: { steps: ['hello'] } })).toEqual({
      steps: ['hello', 'first', 'second'],
    });

    const updates: Array<[string, unknown]> = [];
    for await (const chunk of client.runs.stream(threadId, assistantId, {
      input: { steps: ['again'] },
      streamMode: 'updates',
    })) {
      if (chunk.event === 'updates') updates.push([chunk.event, chunk.data]);
    }
    expect(updates).toEqual([
      ['updates', { first: { steps: ['first'] } }],
      ['updates', { second: { steps: ['second'] } }],
    ]);
    const state = await client.threads.getState(threadId);
    expect(state.values).toEqual({ steps: ['hello', 'first', 'second', 'again', 'first', 'second'] });
    stateBefore = state.values;
    historyBefore = (await client.threads.getHistory(threadId, { limit: 50 })).map((s) => s.checkpoint);
    expect(historyBefore.length).toBeGreaterThan(4);
  }, 60_000);

  it("traces every run into the deployment's tracing project, with no configuration, read back with the langsmith client", async () => {
    const ls = langsmithClient(api.baseUrl, workspaceKey);
    const project = await ls.readProject({ projectName: deploymentName });
    expect(project.id).toBe((await http.get(`/v2/deployments/${deploymentId}`)).body.tracer_session_id);
    // Both runs of the thread, once the instances' clients have sent them whole: a run's start and
    // its end travel in separate batches, so a loaded machine can show a root still pending.
    const roots = await eventually(
      () => rootRunsOn(workspaceKey, deploymentName, threadId),
      (r) => r.length >= 2 && r.every((root) => root.status !== 'pending'),
      60_000,
      500,
    );
    for (const root of roots) {
      expect(root.extra?.metadata).toMatchObject({
        thread_id: threadId,
        revision_id: firstRevision,
        graph_id: 'agent',
        assistant_id: assistantId,
      });
      expect(root).toMatchObject({ status: 'success', prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 });
    }
    // One trace, in the tree's execution order: the graph, its nodes, the model call inside `second`.
    const trace: Run[] = [];
    for await (const run of ls.listRuns({ traceId: roots[0]!.trace_id })) trace.push(run);
    const order = trace.map((r) => r.dotted_order!);
    expect(order).toEqual([...order].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(trace[0]!.id).toBe(roots[0]!.id);
    const names = trace.map((r) => r.name);
    expect(names.indexOf('first')).toBeGreaterThan(0);
    expect(names.indexOf('second')).toBeGreaterThan(names.indexOf('first'));
    const llm = trace.find((r) => r.run_type === 'llm')!;
    expect(llm).toMatchObject({
      name: 'FakeUsageModel',
      prompt_tokens: 11,
      completion_tokens: 4,
      total_tokens: 15,
      status: 'success',
    });
    expect(trace.find((r) => r.id === llm.parent_run_id)?.name).toBe('second');
  }, 90_000);

  it('shows a thread created through one instance to the other (min_scale 2)', async () => {
    const instances = await runningInstances(api, deploymentId);
    expect(instances).toHaveLength(2);
    const [one, two] = instances.map((i) => new Client({ apiUrl: i.url }));
    const created = await one!.threads.create({ metadata: { via: 'one' } });
    expect(await two!.runs.wait(created.thread_id, 'agent', { input: { steps: ['x'] } })).toEqual({
      steps: ['x', 'first', 'second'],
    });
    expect((await one!.threads.getState(created.thread_id)).values).toEqual({ steps: ['x', 'first', 'second'] });
    expect((await two!.threads.get(created.thread_id)).metadata).toMatchObject({ via: 'one' });
  }, 60_000);

  it('keeps the thread, its state and its history across a new commit, and continues it; ' +
    "traces go to the user's own LangSmith too", async () => {
    const sha = commitGraph('-v2');
    const own = `http://${ownLangsmith.address}:${ownLangsmith.port}`;
    const res = await http.patch(`/v2/deployments/${deploymentId}`, {
      source_revision_config: { repo_ref: 'main' },
      secrets: [
        { name: 'LANGSMITH_API_KEY', value: 'lsv2_own_key' },
        { name: 'LANGSMITH_ENDPOINT', value: own },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const rev = await untilDone(deploymentId, res.body.latest_revision_id);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(rev.source_revision_config.repo_commit_sha).toBe(sha);
    // The build's checkout says what the commit is and who made it; the revision, why it exists.
    expect(rev.source_revision_config).toMatchObject({ repo_commit_message: 'graph -v2', repo_commit_author: 't' });
    expect(rev.trigger).toBe('patch');

    expect((await client.threads.get(threadId)).metadata).toMatchObject({ owner: 'e2e' });
    expect((await client.threads.getState(threadId)).values).toEqual(stateBefore);
    expect((await client.threads.getHistory(threadId, { limit: 50 })).map((s) => s.checkpoint)).toEqual(historyBefore);
    expect(await client.runs.wait(threadId, assistantId, { input: { steps: ['later'] } })).toEqual({
      steps: ['hello', 'first', 'second', 'again', 'first', 'second', 'later', 'first-v2', 'second-v2'],
    });
    // The new revision's runs say so, and the user's own LangSmith got them too, with their key.
    const roots = await eventually(
      () => rootRunsOn(workspaceKey, deploymentName, threadId),
      (r) => r.length >= 3,
      60_000,
      500,
    );
    expect(roots.map((r) => r.extra?.metadata?.revision_id)).toEqual([
      res.body.latest_revision_id,
      firstRevision,
      firstRevision,
    ]);
    const theirs = await eventually(
      () => standInRequests(ownLangsmith.output).filter((r) => r.method !== 'GET'),
      // Run ids differ per write target (the client remaps them per project); the metadata names the thread and revision.
      (requests) => requests.some((r) => r.ids.includes(threadId) && r.ids.includes(res.body.latest_revision_id)),
      30_000,
      250,
    );
    expect(theirs.every((r) => r.key === 'lsv2_own_key')).toBe(true);
  }, 420_000);

  it('returns the error of a run that throws and keeps serving', async () => {
    const thread = await client.threads.create();
    await expect(client.runs.wait(thread.thread_id, assistantId, { input: { steps: ['boom'] } })).rejects.toThrow(
      'boom requested',
    );
    expect((await client.runs.list(thread.thread_id))[0]).toMatchObject({ status: 'error' });
    expect((await client.threads.get(thread.thread_id)).status).toBe('error');
    expect((await fetch(`${url}/ok`)).status).toBe(200);
  }, 60_000);

  it("a pull request's preview serves the branch with threads and a store of its own: none crosses to the parent, or back", async () => {
    // The pull request's branch, with the parent's branch left where it is.
    git('checkout', '-q', '-b', 'feature/pr-5');
    const prSha = commitGraph('-pr');
    git('checkout', '-q', 'main');
    const enabled = await http.patch(`/v2/deployments/${deploymentId}`, {
      source_config: { previews: { enabled: true, max_active: 1, resource_spec: { min_scale: 1, max_scale: 1 } } },
    });
    expect(enabled.status, enabled.text).toBe(200);
    const parentThreads = async () => (await client.threads.search({ limit: 100 })).map((t) => t.thread_id).sort();
    const parentBefore = await parentThreads();
    const stateOfParent = (await client.threads.getState(threadId)).values;

    const opened = await http.post(`/v2/deployments/${deploymentId}/previews`, { ref: 'feature/pr-5', number: 5 });
    expect(opened.status, opened.text).toBe(201);
    const rev = await untilDone(opened.body.id, opened.body.latest_revision_id);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(rev.source_revision_config).toMatchObject({ repo_commit_sha: prSha, repo_commit_message: 'graph -pr' });
    expect(rev.trigger).toBe('preview');
    const preview = (await http.get(`/v2/deployments/${opened.body.id}`)).body;
    const previewClient = new Client({ apiUrl: preview.url, apiKey: workspaceKey });

    // The preview runs the branch's graph on a thread of its own.
    const mine = await previewClient.threads.create({ metadata: { on: 'preview' } });
    expect(await previewClient.runs.wait(mine.thread_id, 'agent', { input: { steps: ['pr'] } })).toEqual({
      steps: ['pr', 'first-pr', 'second-pr'],
    });
    await previewClient.store.putItem(['isolation'], 'seen', { by: 'preview' });
    // Nothing of it on the parent; nothing of the parent on the preview.
    await expect(client.threads.get(mine.thread_id)).rejects.toThrow(/404|not found/i);
    await expect(previewClient.threads.get(threadId)).rejects.toThrow(/404|not found/i);
    expect((await previewClient.threads.search({ limit: 100 })).map((t) => t.thread_id)).toEqual([mine.thread_id]);
    expect(await client.store.getItem(['isolation'], 'seen')).toBeNull();
    // A thread made on the parent meanwhile stays the parent's.
    const theirs = await client.threads.create({ metadata: { on: 'parent' } });
    await expect(previewClient.threads.get(theirs.thread_id)).rejects.toThrow(/404|not found/i);
    expect(await parentThreads()).toEqual([...parentBefore, theirs.thread_id].sort());
    expect((await client.threads.getState(threadId)).values).toEqual(stateOfParent);

    expect((await http.delete(`/v2/deployments/${deploymentId}/previews/5`)).status).toBe(204);
  }, 420_000);
});

const START_BOOM_GRAPH = `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

if (process.env.DATABASE_URI) throw new Error('boom at start');

export const graph = new StateGraph(Annotation.Root({ steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) }))
  .addNode('only', async () => ({ steps: ['only'] }))
  .addEdge(START, 'only')
  .addEdge('only', END)
  .compile();
`;

describe('agent servers: a graph that throws only when the server starts', () => {
  it('ends the revision DEPLOY_FAILED with a message that leads with the graph and its error', async () => {
    // The build's graph check imports the graph without the deployment database; the served
    // instance has DATABASE_URI, and this graph throws then.
    const dir = commitProject(reposRoot, { name: 'start-boom-agent', files: { 'src/agent.ts': START_BOOM_GRAPH } });
    const { deploymentId, revisionId } = await deployRepo(dir, 1);
    const rev = await untilDone(deploymentId, revisionId);
    expect(rev.status, rev.status_message).toBe('DEPLOY_FAILED');
    // A second deployment's first build: the agent server's dependencies are the builder's one
    // install (made by the first deployment's build at the latest), copied, not installed again.
    const log = await revisionLogLines(http, deploymentId, revisionId, 'build');
    expect(
      log.find((l) => l.startsWith("Reusing the agent server's installed dependencies")),
      log.join('\n'),
    ).toBeDefined();
    expect(log).not.toContain('$ npm install --no-audit --no-fund --ignore-scripts');
    // Sandboxed, that install's files are linked into the artifact, still the builder's and
    // writable by nobody else: the deployment's uid owns the rest of its tree and none of them.
    // Otherwise (steps run as the builder's user, who could change them) they are a copy.
    const app = path.join(api.config.dataDir, 'artifacts', revisionId, 'app');
    const shared = statSync(path.join(app, '.slipway-agent-server/node_modules/@langchain/langgraph-api/package.json'));
    const [{ sandbox_uid: uid }] = await api.dataSource.query(`SELECT sandbox_uid FROM deployments WHERE id = $1`, [
      deploymentId,
    ]);
    if (uid === null) expect(shared.nlink).toBe(1);
    else {
      expect(statSync(path.join(app, 'src/agent.ts')).uid).toBe(uid);
      expect(statSync(path.join(app, '.slipway-agent-server/package.json')).uid).toBe(uid);
      expect({ links: shared.nlink > 1, owner: shared.uid, othersWrite: shared.mode & 0o022 }).toEqual({
        links: true,
        owner: process.getuid!(),
        othersWrite: 0,
      });
    }
    expect(rev.status_message.split('\n')[0]).toBe(
      "Graph 'agent' (./src/agent.ts:graph) failed to load at start: Error: boom at start",
    );
    expect(rev.status_message).toContain('exited before it answered GET /ok');
  }, 420_000);
});
