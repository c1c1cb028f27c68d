import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAgent, slowAgent, type DeployedAgent } from '../support/agent-projects.js';
import {
  attempts,
  clientOf,
  customs,
  expectNoOpenRuns,
  joinAll,
  runnerAmong,
  slowInput,
  statusOf,
  type Tick,
} from '../support/agent-runs.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 19: `multitask_strategy` is honoured across the agent server's instances. A LangGraph.js
 * project whose graph has slow nodes emitting custom events (test/fixtures/agent-server/
 * slow-graph.ts) is deployed with min_scale 2 by real api, builder and deployer processes. On a
 * thread, run 1 is created with the official SDK through one instance's own address and, while it
 * runs, run 2 is created through the instance that is not running run 1 (so the strategy cannot be
 * settled inside one process): `reject` refuses run 2 and run 1 goes on; `interrupt` stops run 1
 * and runs run 2; `enqueue` holds run 2 `pending` until run 1 is over. (`rollback` is not
 * covered here: it has tests of its own.) Builds install from the npm registry.
 */
const PORT_BASE = 42_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;

beforeAll(async () => {
  agent = await deployAgent(slowAgent('multitask-agent'), { portBase: PORT_BASE, minScale: 2 });
  expect(await agent.instances()).toHaveLength(2);
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

/**
 * Run 1 (`label`, three nodes of `ticks` × `tickMs`) on a new thread, created through the first
 * instance and running; `other` is a client of the instance not running it.
 */
async function firstRunAndOther(label: string, ticks: number, tickMs: number) {
  const [first] = await agent.instances();
  const a = clientOf(first!);
  const thread = await a.threads.create();
  const run = await a.runs.create(thread.thread_id, 'agent', slowInput(label, ticks, tickMs));
  const runner = await runnerAmong(a, thread.thread_id, run.run_id, agent.instances);
  const other = clientOf(await agent.otherThan(runner));
  return { threadId: thread.thread_id, run, runner: clientOf(runner), other };
}

/** Nothing is left pending or running, on any thread, through either instance. */
const expectNoneOpen = async () => expectNoOpenRuns((await agent.instances()).map(clientOf));

describe('multitask strategies across agent server instances', () => {
  it('reject: run 2 is refused with 422 through the other instance; run 1 goes on and succeeds; no run 2 exists', async () => {
    const { threadId, run, runner, other } = await firstRunAndOther('reject-1', 20, 200);
    const refused = other.runs.create(threadId, 'agent', {
      ...slowInput('reject-2', 1, 10),
      multitaskStrategy: 'reject',
    });
    await expect(refused).rejects.toMatchObject({ status: 422 });
    await eventually(
      () => statusOf(other, threadId, run.run_id),
      (s) => s === 'success',
      120_000,
      250,
    );
    // Run 1 went on uninterrupted: every tick of every node, one start, its own input alone.
    const events = await joinAll(other, threadId, run.run_id);
    expect(attempts(events)).toEqual([1]);
    expect(customs(events)).toHaveLength(3 * 20);
    expect((await other.threads.getState(threadId)).values).toMatchObject({
      steps: ['reject-1', 'first', 'second', 'third'],
    });
    expect((await runner.runs.list(threadId, { limit: 100 })).map((r) => r.run_id)).toEqual([run.run_id]);
    await expectNoneOpen();
  }, 180_000);

  it('interrupt: run 1 ends interrupted at once, run 2 runs to success, the thread holds run 2 output', async () => {
    const { threadId, run, runner, other } = await firstRunAndOther('interrupt-1', 40, 100);
    const live: Tick[] = [];
    const watched = joinAll(runner, threadId, run.run_id, { until: (events) => (live.push(events.at(-1)!), false) });
    await eventually(
      async () => live.length,
      (n) => n >= 5,
      60_000,
      50,
    );
    const second = await other.runs.create(threadId, 'agent', {
      ...slowInput('interrupt-2', 3, 50),
      multitaskStrategy: 'interrupt',
    });
    const seenAtCreate = live.length;
    const events = await watched; // run 1's stream ends with it
    // Its cancel was sent before the create answered: of run 1's 40 ticks (100 ms apart, all in its
    // first node) no more than the 1 s a cancel may take follow, and its later nodes never start.
    expect(events.length - seenAtCreate).toBeLessThanOrEqual(10);
    expect(customs(events).every((t) => t.node === 'first')).toBe(true);
    await eventually(
      () => statusOf(other, threadId, run.run_id),
      (s) => s === 'interrupted',
      30_000,
      100,
    );
    await eventually(
      () => statusOf(runner, threadId, second.run_id),
      (s) => s === 'success',
      120_000,
      250,
    );
    expect(customs(await joinAll(runner, threadId, second.run_id))).toHaveLength(3 * 3);
    const { steps } = (await runner.threads.getState(threadId)).values as { steps: string[] };
    expect(steps.slice(-4)).toEqual(['interrupt-2', 'first', 'second', 'third']);
    expect(steps.filter((s) => s === 'first')).toHaveLength(1); // run 1's first node never finished
    expect((await other.threads.get(threadId)).status).toBe('idle');
    await expectNoneOpen();
  }, 180_000);

  it('enqueue: run 2 waits pending while run 1 runs, then runs after it; both succeed in order', async () => {
    const { threadId, run, runner, other } = await firstRunAndOther('enqueue-1', 8, 200);
    const second = await other.runs.create(threadId, 'agent', {
      ...slowInput('enqueue-2', 3, 50),
      multitaskStrategy: 'enqueue',
    });
    expect(second.status).toBe('pending');
    // Run 2 read before run 1: whenever run 1 was still running, run 2 had not started yet.
    const samples: Array<{ first: string; second: string }> = [];
    await eventually(
      async () => {
        const s2 = await statusOf(other, threadId, second.run_id);
        const s1 = await statusOf(runner, threadId, run.run_id);
        samples.push({ first: s1, second: s2 });
        return s1;
      },
      (s) => s !== 'running',
      120_000,
      200,
    );
    const whileFirstRan = samples.filter((s) => s.first === 'running');
    expect(whileFirstRan.length).toBeGreaterThan(0);
    expect(whileFirstRan.every((s) => s.second === 'pending')).toBe(true);
    await eventually(
      () => statusOf(other, threadId, second.run_id),
      (s) => s === 'success',
      120_000,
      250,
    );
    expect(await statusOf(other, threadId, run.run_id)).toBe('success');
    // Both ran whole, run 2 after run 1 (the state's reducer appends in the order nodes finished).
    expect((await other.threads.getState(threadId)).values).toMatchObject({
      steps: ['enqueue-1', 'first', 'second', 'third', 'enqueue-2', 'first', 'second', 'third'],
    });
    const [late, early] = await runner.runs.list(threadId, { limit: 100 }); // newest first
    expect([early!.run_id, late!.run_id]).toEqual([run.run_id, second.run_id]);
    // Run 2 was created before run 1 ended, and ended after it.
    expect(Date.parse(late!.created_at)).toBeLessThan(Date.parse(early!.updated_at));
    expect(Date.parse(early!.updated_at)).toBeLessThanOrEqual(Date.parse(late!.updated_at));
    await expectNoneOpen();
  }, 180_000);
});
