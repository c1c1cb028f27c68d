import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAgent, slowAgent, type DeployedAgent } from '../support/agent-projects.js';
import {
  attempts,
  clientOf,
  customs,
  expectNoOpenRuns,
  expectSucceededWhole,
  joinAll,
  killDuringSecondNode,
  runnerAmong,
  slowInput,
  statusOf,
  type Tick,
} from '../support/agent-runs.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 19: the agent server's instances act as one server. A LangGraph.js project whose graph
 * has slow nodes emitting custom events (test/fixtures/agent-server/slow-graph.ts) is deployed
 * with min_scale 2, pre-built (writeAgentArtifact), by real api and deployer processes; runs are created, joined and
 * cancelled with the official SDK through the serving URL and through each instance's own
 * address, and instances are killed, frozen and rolled over under running runs. Runs' leases are
 * short here (2 s) so lapsed ones are taken over quickly.
 *
 * On the same deployment, `multitask_strategy` is honoured across the instances: on a thread,
 * run 1 is created through one instance's own address and, while it runs, run 2 through the
 * instance not running run 1 (so the strategy cannot be settled inside one process): `reject`
 * refuses run 2 and run 1 goes on; `interrupt` stops run 1 and runs run 2; `enqueue` holds run 2
 * `pending` until run 1 is over. (`rollback` has tests of its own.) These come first: the
 * instance cases after them kill, freeze and replace instances.
 */
const PORT_BASE = 36_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  agent = await deployAgent(slowAgent('slow-agent'), { portBase: PORT_BASE, minScale: 2 });
  expect(await agent.instances()).toHaveLength(2);
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

/**
 * Run 1 (`label`, three nodes of `ticks` × `tickMs`) on a new thread, created through the first
 * instance and running; `other` is a client of the instance not running it.
 */
async function firstRunAndOther(label: string, ticks: number, tickMs: number) {
  const [first] = await agent.untilInstances(2);
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

describe('agent server instances act as one server', () => {
  it('streams a background run joined through each instance: every event, in order, with the same ids', async () => {
    const [a, b] = (await agent.instances()).map(clientOf);
    const thread = await agent.client.threads.create();
    const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('both', 4, 150));
    const [viaA, viaB] = await Promise.all([
      joinAll(a!, thread.thread_id, run.run_id),
      joinAll(b!, thread.thread_id, run.run_id),
    ]);
    const ticks = customs(viaA).map((t) => `${t.node}${t.i}`);
    expect(ticks).toEqual(['first', 'second', 'third'].flatMap((n) => [0, 1, 2, 3].map((i) => `${n}${i}`)));
    expect(viaB).toEqual(viaA);
    expect(viaA.every((e) => typeof e.id === 'string' && e.id.length > 0)).toBe(true);
    expect(new Set(viaA.map((e) => e.id)).size).toBe(viaA.length);
    expect(await statusOf(agent.client, thread.thread_id, run.run_id)).toBe('success');
  }, 120_000);

  it('re-joins with Last-Event-ID on the other instance and gets exactly the missing events', async () => {
    const [a, b] = (await agent.instances()).map(clientOf);
    const thread = await a!.threads.create();
    const run = await a!.runs.create(thread.thread_id, 'agent', {
      ...slowInput('rejoin', 4, 150),
      streamResumable: true,
    });
    const head = await joinAll(a!, thread.thread_id, run.run_id, { limit: 5 });
    expect(head).toHaveLength(5);
    const rest = await joinAll(b!, thread.thread_id, run.run_id, { lastEventId: head.at(-1)!.id });
    const whole = await joinAll(a!, thread.thread_id, run.run_id);
    expect(customs(whole)).toHaveLength(12);
    expect([...head, ...rest]).toEqual(whole);
  }, 120_000);

  for (const through of ['the instance running the run', 'the other instance'] as const) {
    it(`cancels a run through ${through}: it ends interrupted at once and no event follows`, async () => {
      const thread = await agent.client.threads.create();
      const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('cancel', 40, 100));
      const runner = await agent.runnerOf(thread.thread_id, run.run_id);
      const other = await agent.otherThan(runner);
      const canceller = clientOf(through === 'the other instance' ? other : runner);
      const watcher = clientOf(through === 'the other instance' ? runner : other);
      const live: Tick[] = [];
      const watched = joinAll(watcher, thread.thread_id, run.run_id, {
        until: (events) => (live.push(events.at(-1)!), false),
      });
      await eventually(
        async () => live.length,
        (n) => n >= 5,
        20_000,
        50,
      );
      const seenAtCancel = live.length;
      await canceller.runs.cancel(thread.thread_id, run.run_id);
      await eventually(
        () => statusOf(canceller, thread.thread_id, run.run_id),
        (s) => s === 'interrupted',
        1_000,
        50,
      );
      const events = await watched; // the stream ends with the run
      // Nothing after the cancel but what was already on its way: the run stops within the 1 s the
      // cancel is allowed, and ticks are 100 ms apart (of the 40 it would emit, 30 never come).
      expect(events.length - seenAtCancel).toBeLessThanOrEqual(10);
      expect(customs(events).every((t) => t.node === 'first')).toBe(true);
      await sleep(1_500);
      expect(await joinAll(watcher, thread.thread_id, run.run_id)).toEqual(events);
      expect((await watcher.threads.get(thread.thread_id)).status).toBe('idle');
    }, 120_000);
  }

  it('finishes a run on another instance after kill -9 of its own, from its checkpoint', async () => {
    const thread = await agent.client.threads.create();
    const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('killed', 12, 250));
    const runner = await agent.runnerOf(thread.thread_id, run.run_id);
    const survivor = clientOf(await agent.otherThan(runner));
    const resumed = await killDuringSecondNode(survivor, thread.thread_id, run.run_id, runner.pid, 'killed');
    expect(resumed.every((t) => String(t.port) !== String(runner.port))).toBe(true);
    expect((await survivor.threads.get(thread.thread_id)).status).toBe('idle');
  }, 180_000);

  it('refuses the writes of a frozen worker whose run was requeued past its lease', async () => {
    await agent.untilInstances(2); // after the kill above, both serve again
    const thread = await agent.client.threads.create();
    const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('frozen', 10, 250));
    const runner = await agent.runnerOf(thread.thread_id, run.run_id);
    const survivor = clientOf(await agent.otherThan(runner));
    process.kill(-runner.pid, 'SIGSTOP');
    try {
      // Its lease lapses (2 s), the run is requeued and another instance takes it over.
      const seen = await joinAll(survivor, thread.thread_id, run.run_id, {
        until: (events) => attempts(events).length === 2,
      });
      expect(attempts(seen)).toEqual([1, 2]);
    } finally {
      process.kill(-runner.pid, 'SIGCONT');
    }
    await eventually(
      () => statusOf(survivor, thread.thread_id, run.run_id),
      (s) => s === 'success',
      60_000,
      250,
    );
    await sleep(3_000); // what the thawed worker would still have written
    expect((await survivor.threads.getState(thread.thread_id)).values).toMatchObject({
      steps: ['frozen', 'first', 'second', 'third'],
    });
    const events = await joinAll(survivor, thread.thread_id, run.run_id);
    const takeover = events.findIndex((e) => e.event === 'metadata' && e.data.attempt === 2);
    expect(takeover).toBeGreaterThan(0);
    expect(customs(events.slice(takeover)).every((t) => String(t.port) !== String(runner.port))).toBe(true);
    expect(await statusOf(survivor, thread.thread_id, run.run_id)).toBe('success');
  }, 180_000);

  it('leaves no run running or pending after a redeploy during a 20 s run', async () => {
    await agent.untilInstances(2);
    const revisionId = await agent.redeployStarted();
    const thread = await agent.client.threads.create();
    const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('rollout', 27, 250));
    await agent.expectDeployed(revisionId);
    const now = (await agent.instances()).map(clientOf);
    await expectSucceededWhole(now[0]!, thread.thread_id, run.run_id, 'rollout');
    await expectNoOpenRuns(now);
  }, 420_000);
});
