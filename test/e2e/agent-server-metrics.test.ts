import type { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAgent, type DeployedAgent } from '../support/agent-projects.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 22, agent-server runs in a deployment's metrics (docs/api.md, Metrics): a LangGraph.js
 * project whose one node sleeps and then fails when asked is deployed, pre-built (writeAgentArtifact),
 * by real api and deployer processes; runs are made with the official SDK through the serving URL — on a thread
 * and without one (those rows are deleted when they end) — and GET /v2/deployments/{id}/metrics
 * must count each exactly once by outcome, with a run duration.
 */
const PORT_BASE = 41_000 + Math.floor(Math.random() * 2_000);

const GRAPH = `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  ms: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
  fail: Annotation<boolean>({ reducer: (_, b) => b, default: () => false }),
  done: Annotation<boolean>({ reducer: (_, b) => b, default: () => false }),
});

export const graph = new StateGraph(State)
  .addNode('work', async (state: typeof State.State) => {
    await new Promise((resolve) => setTimeout(resolve, state.ms));
    if (state.fail) throw new Error('asked to fail');
    return { done: true };
  })
  .addEdge(START, 'work')
  .addEdge('work', END)
  .compile();
`;

let agent: DeployedAgent;
let client: Client;

beforeAll(async () => {
  // A longer rollout deadline than the usual 2 min: on a busy two-core machine an agent-server
  // instance has taken over that to answer its first probe.
  agent = await deployAgent(
    { name: 'run-metrics', files: { 'src/agent.ts': GRAPH } },
    { portBase: PORT_BASE, minScale: 1, rolloutDeadlineMs: 300_000 },
  );
  ({ client } = agent);
  expect((await agent.http.get(`/v2/deployments/${agent.deploymentId}`)).body.agent_server).toBe(true);
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

const metrics = async () => {
  const res = await agent.http.get(`/v2/deployments/${agent.deploymentId}/metrics?window=1h`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const sum = (points: Array<[number, number | null]>) => points.reduce((s, [, v]) => s + (v ?? 0), 0);

describe("an agent server's runs in its deployment metrics", () => {
  it('counts every run once by outcome, threadless ones included, with a median duration', async () => {
    const before = await metrics();
    expect(before.totals.runs_started).toBe(0);
    expect(before.totals.run_duration_p50_ms).toBeNull();

    const SUCCEEDED = 3;
    // Without a thread: the run's row is deleted once it ends.
    for (let i = 0; i < SUCCEEDED - 1; i++)
      expect(await client.runs.wait(null, 'agent', { input: { ms: 120 } })).toMatchObject({ done: true });
    const thread = await client.threads.create();
    expect(await client.runs.wait(thread.thread_id, 'agent', { input: { ms: 120 } })).toMatchObject({ done: true });
    const failing = await client.threads.create();
    const failed = await client.runs.create(failing.thread_id, 'agent', { input: { ms: 120, fail: true } });
    await client.runs.join(failing.thread_id, failed.run_id).catch(() => undefined);
    expect((await client.runs.get(failing.thread_id, failed.run_id)).status).toBe('error');
    const RUNS = SUCCEEDED + 1;

    // Counted by the instance, read by the deployer every 5 s, stored once its 10 s bucket is over.
    const body = await eventually(
      metrics,
      (b) => b.totals.runs_succeeded + b.totals.runs_failed >= RUNS,
      60_000,
      1_000,
    );
    expect(body.totals.runs_started).toBe(RUNS);
    expect(body.totals.runs_succeeded).toBe(SUCCEEDED);
    expect(body.totals.runs_failed).toBe(1);
    expect(sum(body.series.runs_started)).toBe(RUNS);
    expect(sum(body.series.runs_failed)).toBe(1);
    // Each run slept 120 ms: none is in the buckets up to 100 ms, so the approximate median is above.
    expect(body.totals.run_duration_p50_ms).toBeGreaterThan(100);
    expect(body.totals.run_duration_p50_ms).toBeLessThan(60_000);
    expect(body.series.run_duration_p50_ms.some(([, v]: [number, number | null]) => v !== null && v > 0)).toBe(true);

    // Read once: a later read adds nothing.
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    expect((await metrics()).totals.runs_started).toBe(RUNS);
  }, 180_000);
});
