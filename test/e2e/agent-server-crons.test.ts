import type { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAgent, type DeployedAgent } from '../support/agent-projects.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 19: the agent server's crons and TTL sweeps. A one-node LangGraph.js project is deployed
 * with min_scale 2, pre-built (writeAgentArtifact), by real api and deployer processes and called with the official SDK
 * through the serving URL. Its langgraph.json sets `checkpointer.ttl` (threads idle 30 s expire)
 * and `store.ttl` (items expire after 3 s), and SLIPWAY_AGENT_SERVER_TTL_SWEEP_MS sweeps every
 * second; its `ui` names a generative UI component. The deployment's own database is read directly (as the server's superuser) to see that
 * swept records are gone, not only hidden. The cron case
 * fires every 20 s (a six-field schedule, seconds first) and waits for two ticks.
 */
const PORT_BASE = 38_000 + Math.floor(Math.random() * 2_000);
const THREAD_TTL_MINUTES = 0.5;
const STORE_TTL_MINUTES = 0.05;

let agent: DeployedAgent;
let url: string;
let apiKey: string;
let client: Client;
let deploymentDb: pg.Client;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The firing case's schedule: every 20 s, seconds first (the same parser reads five fields). */
const TICK_MS = 20_000;
const TICK_SCHEDULE = '*/20 * * * * *';
const tickOf = (t: number) => Math.floor(t / TICK_MS);

const GRAPH = `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

export const graph = new StateGraph(Annotation.Root({ steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) }))
  .addNode('only', async () => ({ steps: ['only'] }))
  .addEdge(START, 'only')
  .addEdge('only', END)
  .compile();
`;

beforeAll(async () => {
  agent = await deployAgent(
    {
      name: 'cron-agent',
      files: {
        'src/agent.ts': GRAPH,
        'src/ui.tsx':
          `const Card = (props: { title: string }) => <div ` +
          `className="cron-card">{props.title}</div>;\nexport default { card: Card };\n`,
      },
      env: { SLIPWAY_AGENT_SERVER_TTL_SWEEP_MS: '1000' },
      config: {
        checkpointer: { ttl: { strategy: 'delete', default_ttl: THREAD_TTL_MINUTES, sweep_interval_minutes: 60 } },
        store: { ttl: { default_ttl: STORE_TTL_MINUTES, refresh_on_read: false, sweep_interval_minutes: 60 } },
        ui: { agent: './src/ui.tsx' },
      },
    },
    { portBase: PORT_BASE, minScale: 2 },
  );
  ({ url, apiKey, client } = agent);
  expect(await agent.instances()).toHaveLength(2);
  const [row] = await agent.api.dataSource.query('SELECT database_name FROM deployments WHERE id = $1', [
    agent.deploymentId,
  ]);
  const at = new URL(agent.api.database.url);
  at.pathname = `/${row.database_name}`;
  deploymentDb = new pg.Client({ connectionString: at.toString() });
  await deploymentDb.connect();
}, 420_000);

afterAll(async () => {
  await deploymentDb?.end();
  await agent?.stop();
}, 120_000);

const countRows = async (sql: string, params: unknown[]) =>
  Number((await deploymentDb.query(`SELECT count(*) AS n FROM ${sql}`, params)).rows[0].n);

describe('agent server crons and TTLs', () => {
  it('/info reports crons and the store as served', async () => {
    const res = await fetch(`${url}/info`, { headers: { 'x-api-key': apiKey } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { flags: Record<string, boolean> }).flags).toMatchObject({
      assistants: true,
      crons: true,
      store: true,
    });
  });

  it('serves the generative UI components named by langgraph.json ui', async () => {
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const tags = await fetch(`${url}/ui/agent`, { method: 'POST', headers, body: JSON.stringify({ name: 'card' }) });
    expect(tags.status).toBe(200);
    expect(await tags.text()).toContain('/ui/agent/entrypoint.js');
    const bundle = await fetch(`${url}/ui/agent/entrypoint.js`, { headers });
    expect(bundle.status).toBe(200);
    expect(await bundle.text()).toContain('cron-card');
    expect(
      (await fetch(`${url}/ui/nobody`, { method: 'POST', headers, body: JSON.stringify({ name: 'card' }) })).status,
    ).toBe(404);
  });

  it('creates, searches, counts, updates and deletes a thread cron', async () => {
    const thread = await client.threads.create();
    const endTime = new Date(Date.now() + 86_400_000).toISOString();
    const created = await client.crons.createForThread(thread.thread_id, 'agent', {
      schedule: '0 3 * * *',
      timezone: 'Europe/Paris',
      input: { steps: ['cron'] },
      metadata: { suite: 'round-trip' },
      endTime,
    });
    expect(created).toMatchObject({
      thread_id: thread.thread_id,
      schedule: '0 3 * * *',
      metadata: { suite: 'round-trip' },
      payload: { input: { steps: ['cron'] } },
    });
    expect(new Date(created.end_time!).toISOString()).toBe(endTime);
    // 03:00 in Paris is 01:00 or 02:00 UTC, within the next day.
    const next = new Date(created.next_run_date);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect([1, 2]).toContain(next.getUTCHours());

    const found = await client.crons.search({ threadId: thread.thread_id });
    expect(found.map((c) => c.cron_id)).toEqual([created.cron_id]);
    expect(found[0]).toMatchObject({ enabled: true, timezone: 'Europe/Paris' });
    expect(await client.crons.count({ threadId: thread.thread_id })).toBe(1);
    expect(await client.crons.count({ metadata: { suite: 'round-trip' } })).toBe(1);
    expect(await client.crons.count({ metadata: { suite: 'nobody' } })).toBe(0);

    const paused = await client.crons.update(created.cron_id, {
      schedule: '*/10 * * * *',
      enabled: false,
      metadata: { paused: true },
    });
    expect(paused).toMatchObject({
      schedule: '*/10 * * * *',
      enabled: false,
      next_run_date: null,
      metadata: { suite: 'round-trip', paused: true },
    });
    const resumed = await client.crons.update(created.cron_id, { enabled: true, endTime: null });
    expect(resumed.end_time).toBeNull();
    expect(new Date(resumed.next_run_date!).getUTCMinutes() % 10).toBe(0);
    expect((await client.crons.search({ threadId: thread.thread_id, enabled: true }))[0]!.schedule).toBe(
      '*/10 * * * *',
    );

    await expect(
      client.crons.createForThread(thread.thread_id, 'agent', { schedule: 'every day' }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      client.crons.createForThread('00000000-0000-4000-8000-000000000000', 'agent', { schedule: '* * * * *' }),
    ).rejects.toMatchObject({ status: 404 });

    await client.crons.delete(created.cron_id);
    expect(await client.crons.count({ threadId: thread.thread_id })).toBe(0);
    expect(await client.crons.search({ threadId: thread.thread_id })).toEqual([]);
    await expect(client.crons.delete(created.cron_id)).rejects.toMatchObject({ status: 404 });
  }, 60_000);

  it('fires stateless crons exactly once per tick across two instances, keeping or deleting their threads', async () => {
    // Runs ever inserted, deleted ones included (the server's statistics): only these crons make
    // runs while this case runs, and the cases before it make none.
    const runsInserted = async () => {
      const { rows } = await deploymentDb.query(
        `SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'slipway_agent_runs'`,
      );
      return Number(rows[0].n_tup_ins);
    };
    const insertedBefore = await runsInserted();
    const cron = await client.crons.create('agent', {
      schedule: TICK_SCHEDULE,
      input: { steps: ['tick'] },
      onRunCompleted: 'keep',
    });
    expect(cron).toMatchObject({ thread_id: null, on_run_completed: 'keep' });
    const deleting = await client.crons.create('agent', { schedule: TICK_SCHEDULE, input: { steps: ['gone'] } });
    expect(deleting).toMatchObject({ thread_id: null, on_run_completed: 'delete' });
    const createdAt = new Date(cron.created_at).getTime();
    // Each tick runs on a thread of its own, kept 30 s (the TTL): seen by polling every second.
    const runsByThread = new Map<string, string[]>();
    const poll = async () => {
      for (const t of await client.threads.search({ metadata: { cron_id: cron.cron_id }, limit: 100 })) {
        const runs = await client.runs.list(t.thread_id).catch(() => null); // swept meanwhile
        if (runs)
          runsByThread.set(
            t.thread_id,
            runs.map((r) => `${r.run_id}:${r.status}`),
          );
      }
    };
    // Until two ticks passed, stopping 6–12 s after a tick (never near the next one) to delete both.
    // Polled all along: a kept thread is swept 30 s after its run.
    let now: number;
    do {
      await poll();
      await sleep(1_000);
      now = Date.now();
    } while (tickOf(now) - tickOf(createdAt) < 2 || now % TICK_MS < 6_000 || now % TICK_MS > 12_000);
    await Promise.all([client.crons.delete(cron.cron_id), client.crons.delete(deleting.cron_id)]);
    expect(tickOf(Date.now()), 'the deletes reached into the next tick').toBe(tickOf(now));
    const ticks = tickOf(now) - tickOf(createdAt);
    const deletingTicks = tickOf(now) - tickOf(new Date(deleting.created_at).getTime());
    // Every tick's thread, and its run done (the last one may still be running).
    await eventually(
      async () => (await poll(), [...runsByThread.values()]),
      (runs) => runs.length === ticks && runs.every((r) => r.every((run) => run.endsWith(':success'))),
      20_000,
      1_000,
    );
    expect(runsByThread.size).toBe(ticks);
    // The deleting cron ran as often, and none of its threads is left once its last run ended.
    await eventually(
      () => client.threads.search({ metadata: { cron_id: deleting.cron_id } }),
      (threads) => threads.length === 0,
      20_000,
      1_000,
    );
    await eventually(
      async () => (await runsInserted()) - insertedBefore,
      (n) => n >= ticks + deletingTicks,
      30_000,
      1_000,
    );
    await sleep(11_000); // each instance's backends report their counts within 10 s: a duplicate would show by now
    expect((await runsInserted()) - insertedBefore).toBe(ticks + deletingTicks);
    for (const [threadId, runs] of runsByThread) {
      expect(runs, `runs of ${threadId}`).toHaveLength(1);
      expect(runs[0]).toMatch(/:success$/);
    }
  }, 240_000);

  it('sweeps a thread idle past checkpointer.ttl with its checkpoints, and not a younger one', async () => {
    const old = await client.threads.create();
    expect(await client.runs.wait(old.thread_id, 'agent', { input: { steps: ['old'] } })).toEqual({
      steps: ['old', 'only'],
    });
    expect(await countRows('checkpoints WHERE thread_id = $1', [old.thread_id])).toBeGreaterThan(0);
    await sleep(12_000);
    const young = await client.threads.create();
    await eventually(
      () =>
        client.threads.get(old.thread_id).then(
          () => 200,
          (err) => err.status as number,
        ),
      (s) => s === 404,
      60_000,
      500,
    );
    expect(await countRows('checkpoints WHERE thread_id = $1', [old.thread_id])).toBe(0);
    expect(await countRows('checkpoint_blobs WHERE thread_id = $1', [old.thread_id])).toBe(0);
    expect(await countRows('slipway_agent_runs WHERE thread_id = $1', [old.thread_id])).toBe(0);
    expect((await client.threads.get(young.thread_id)).thread_id).toBe(young.thread_id);
  }, 120_000);

  it('sweeps a store item past store.ttl from the database', async () => {
    const namespace = ['ttl', `n${Date.now()}`];
    await client.store.putItem(namespace, 'k', { v: 1 });
    const row = await deploymentDb.query('SELECT expires_at FROM store WHERE namespace_path = $1 AND key = $2', [
      namespace.join(':'),
      'k',
    ]);
    expect(row.rows).toHaveLength(1);
    expect(row.rows[0].expires_at).not.toBeNull();
    await eventually(
      () => countRows('store WHERE namespace_path = $1', [namespace.join(':')]),
      (n) => n === 0,
      30_000,
      500,
    );
    expect(await client.store.getItem(namespace, 'k')).toBeNull();
  }, 60_000);
});
