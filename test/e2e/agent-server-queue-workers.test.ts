import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAgent, slowAgent, type DeployedAgent, type Instance } from '../support/agent-projects.js';
import {
  customs,
  expectNoOpenRuns,
  expectSucceededWhole,
  joinAll,
  killDuringSecondNode,
  slowInput,
  statusOf,
} from '../support/agent-runs.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 19, queue workers: a LangGraph.js project with slow nodes that emit custom events naming
 * the PORT of the process running them (test/fixtures/agent-server/slow-graph.ts) is deployed,
 * pre-built (writeAgentArtifact), by real api and deployer processes with one API instance and `queue_min_scale: 2`. Runs
 * are created and joined with the official SDK through the serving URL; which process ran each
 * node is read from its events and checked against the runtime's table of API instances and
 * queue workers. A worker is killed under a run, and the deployment is redeployed under another.
 * Leases are short here (2 s) so lapsed ones are taken over quickly.
 */
const PORT_BASE = 38_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;

const apiInstances = () => agent.instances('api');
const workers = () => agent.instances('queue');

beforeAll(async () => {
  agent = await deployAgent(slowAgent('queue-agent'), {
    portBase: PORT_BASE,
    minScale: 1,
    spec: { queue_min_scale: 2, queue_max_scale: 2, queue_memory_mb: 768 },
  });
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

describe('agent server queue workers', () => {
  it('runs every run on the queue workers (10 loops each) and none on the API instance', async () => {
    const [served] = await apiInstances();
    expect(await apiInstances()).toHaveLength(1);
    expect(await workers()).toHaveLength(2);
    const workerPorts = new Set((await workers()).map((w) => String(w.port)));
    // A worker serves only its health probe.
    const worker = (await workers())[0]!;
    expect((await fetch(`${worker.url}/ok`)).status).toBe(200);
    expect((await fetch(`${worker.url}/info`)).status).toBe(404);

    const started = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const thread = await agent.client.threads.create();
        return { thread, run: await agent.client.runs.create(thread.thread_id, 'agent', slowInput(`q${i}`, 3, 100)) };
      }),
    );
    const ran = new Set<string>();
    for (const { thread, run } of started) {
      const events = await joinAll(agent.client, thread.thread_id, run.run_id);
      expect(customs(events)).toHaveLength(9);
      for (const t of customs(events)) ran.add(String(t.port));
      expect(await statusOf(agent.client, thread.thread_id, run.run_id)).toBe('success');
    }
    expect(
      [...ran].every((port) => workerPorts.has(port)),
      `ran on ${[...ran]}`,
    ).toBe(true);
    expect(ran.has(String(served!.port))).toBe(false);

    // What each process says it is (its log is its part of the deploy log).
    expect(readFileSync(served!.logPath, 'utf8')).toContain('no worker loops: queue workers run the graphs');
    for (const w of await workers())
      expect(readFileSync(w.logPath, 'utf8')).toContain('queue worker running 10 jobs at once');
    const deployLog: Array<{ message: string }> = await agent.api.dataSource.query(
      `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'deploy'`,
      [served!.revisionId],
    );
    expect(deployLog.some((l) => /Started 1 instance\(s\) .* and 2 queue worker\(s\)/.test(l.message))).toBe(true);
    expect(deployLog.some((l) => l.message.includes('--- slipway: starting queue worker 1 of revision'))).toBe(true);
    expect(
      deployLog.some((l) => l.message === 'All 1 instance(s) and 2 queue worker(s) answer their health probe.'),
    ).toBe(true);
  }, 180_000);

  it('finishes a run on the other worker after kill -9 of its own, from its checkpoint', async () => {
    await agent.untilInstances(2, 'queue');
    const thread = await agent.client.threads.create();
    const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('killed', 12, 250));
    const runner = await agent.runnerOf(thread.thread_id, run.run_id, 'queue');
    const resumed = await killDuringSecondNode(agent.client, thread.thread_id, run.run_id, runner.pid, 'killed');
    const apiPorts = (await apiInstances()).map((i) => String(i.port));
    expect(resumed.every((t) => String(t.port) !== String(runner.port) && !apiPorts.includes(String(t.port)))).toBe(
      true,
    );
    // The killed worker is restarted by the runtime (same row, a new process).
    const restarted = await eventually(
      workers,
      (list) => list.length === 2 && list.every((w) => w.pid !== runner.pid),
      120_000,
      500,
    );
    expect(restarted.map((w) => w.port)).toContain(runner.port);
  }, 240_000);

  it('replaces the workers in a redeploy during a run and leaves no run running or pending', async () => {
    await agent.untilInstances(2, 'queue');
    const before = new Set((await workers()).map((w) => w.pid));
    const revisionId = await agent.redeployStarted();
    const thread = await agent.client.threads.create();
    const run = await agent.client.runs.create(thread.thread_id, 'agent', slowInput('rollout', 27, 250));
    await agent.expectDeployed(revisionId);
    // Deployed only with its workers up; the old ones go.
    expect((await workers()).filter((w) => w.revisionId === revisionId)).toHaveLength(2);
    const now: Instance[] = await eventually(
      workers,
      (list) => list.length === 2 && list.every((w) => w.revisionId === revisionId),
      60_000,
      250,
    );
    expect(now.some((w) => before.has(w.pid))).toBe(false);
    await expectSucceededWhole(agent.client, thread.thread_id, run.run_id, 'rollout');
    const apiPorts = (await apiInstances()).map((i) => String(i.port));
    expect(
      customs(await joinAll(agent.client, thread.thread_id, run.run_id)).every(
        (t) => !apiPorts.includes(String(t.port)),
      ),
    ).toBe(true);
    await expectNoOpenRuns([agent.client]);
  }, 420_000);
});
