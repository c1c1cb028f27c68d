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
  slowInput,
  statusOf,
  type Tick,
} from '../support/agent-runs.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 19: the agent server's instances act as one server. A LangGraph.js project whose graph
 * has slow nodes emitting custom events (test/fixtures/agent-server/slow-graph.ts) is deployed
 * with min_scale 2 by real api, builder and deployer processes; runs are created, joined and
 * cancelled with the official SDK through the serving URL and through each instance's own
 * address, and instances are killed, frozen and rolled over under running runs. Runs' leases are
 * short here (2 s) so lapsed ones are taken over quickly. Builds install from the npm registry.
 */
const PORT_BASE = 36_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  agent = await deployAgent(slowAgent('slow-agent'), { portBase: PORT_BASE, minScale: 2 });
  expect(await agent.instances()).toHaveLength(2);
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

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
