import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SERVER_HOST_ENTRY } from '../../services/builder/src/agent-server-host.js';
import { builtAgentServerHost } from '../support/agent-server-host.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/ports.js';
import { attempts, customs, joinAll, slowInput } from '../support/agent-runs.js';
import { eventually } from '../support/service-process.js';

/**
 * The agent server host's storage, on its own: the host (services/agent-server, installed as
 * the builder installs it, from the npm registry) serving a fixture graph with this file's own
 * database and Redis prefix, two instances, no control plane. What the e2e files cannot see from
 * outside: the earlier single-table records moved into the row tables, the database holding one
 * running run per thread, and reads that use indexes only (no table read whole), at 20,000
 * threads and runs and on an idle instance; a running run rolled back from the instance that does
 * not run it gone with its checkpoints; a start refused, naming the key, on TTL settings of
 * langgraph.json it cannot honour; and a start that says it waits for a database that does not answer.
 */
const GRAPH = fileURLToPath(new URL('../fixtures/agent-server/slow-graph.ts', import.meta.url));

let root: string;
let hostDir: string;
let db: TestDatabase;
let sql: pg.Client;
const servers: ChildProcess[] = [];
let clients: Client[] = [];
let ports: number[] = [];

const LEGACY_THREAD = '0190c5d1-0000-7000-8000-000000000001';

/** The id of seeded thread `i` (and, with another prefix, of its run): a UUID, as the API takes. */
const seeded = (i: number, prefix = '00000000') => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`;
const SEEDED_SQL = (prefix: string) => `'${prefix}-0000-4000-8000-' || lpad(i::text, 12, '0')`;

/** Writes records the way the single-table host did: superjson text, one row per record. */
async function seedLegacyRecords(): Promise<void> {
  const { serialize } = await import(
    pathToFileURL(path.join(hostDir, 'node_modules/@langchain/langgraph-api/dist/storage/persist.mjs')).href
  );
  const at = new Date('2026-01-02T03:04:05Z');
  const assistant = {
    assistant_id: 'legacy-assistant',
    graph_id: 'agent',
    name: 'legacy',
    description: null,
    config: {},
    context: {},
    metadata: { from: 'legacy' },
    version: 1,
    created_at: at,
    updated_at: at,
  };
  const run = (id: string, status: string) => ({
    run_id: id,
    thread_id: LEGACY_THREAD,
    assistant_id: 'legacy-assistant',
    status,
    metadata: {},
    kwargs: { input: { steps: ['old'] } },
    multitask_strategy: 'reject',
    created_at: at,
    updated_at: at,
  });
  const records: Array<[string, string, unknown]> = [
    ['assistants', 'legacy-assistant', assistant],
    ['assistant_versions', 'legacy-assistant:1', { ...assistant }],
    [
      'threads',
      LEGACY_THREAD,
      {
        thread_id: LEGACY_THREAD,
        status: 'busy',
        metadata: { owner: 'legacy', graph_id: 'agent' },
        config: {},
        values: { steps: ['old'] },
        created_at: at,
        updated_at: at,
      },
    ],
    ['runs', '0190c5d1-0000-7000-8000-0000000000a1', run('0190c5d1-0000-7000-8000-0000000000a1', 'success')],
    ['runs', '0190c5d1-0000-7000-8000-0000000000a2', run('0190c5d1-0000-7000-8000-0000000000a2', 'running')],
  ];
  await sql.query(
    `CREATE TABLE slipway_agent_records (kind text NOT NULL, id text NOT NULL, ` +
      `data text NOT NULL, owner text, claimed_at timestamptz, PRIMARY KEY (kind, id));
                   CREATE TABLE slipway_agent_records_version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version bigint NOT NULL)`,
  );
  for (const [kind, id, value] of records)
    await sql.query('INSERT INTO slipway_agent_records (kind, id, data) VALUES ($1, $2, $3)', [
      kind,
      id,
      serialize(value),
    ]);
}

async function startHost(port: number, redisPrefix: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(hostDir, AGENT_SERVER_HOST_ENTRY), 'langgraph.json'], {
    cwd: root,
    env: {
      PATH: process.env.PATH!,
      PORT: String(port),
      DATABASE_URI: db.url,
      REDIS_URI: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: redisPrefix,
      SLIPWAY_AGENT_SERVER_RUN_LEASE_MS: '2000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  servers.push(child);
  await eventually(
    () =>
      fetch(`http://127.0.0.1:${port}/ok`).then(
        (r) => r.status,
        () => 0,
      ),
    (s) => s === 200,
    90_000,
    250,
  );
  return child;
}

/**
 * Per agent table, from pg_stat_user_tables: the rows sequential scans read so far (a table read
 * whole) and the index scans (which show the hosts' statistics did arrive).
 */
async function tableReads(): Promise<{ whole: Record<string, number>; indexScans: number }> {
  const { rows } = await sql.query(
    `SELECT relname, seq_tup_read, idx_scan FROM pg_stat_user_tables WHERE relname IN ('slipway_agent_threads', 'slipway_agent_runs')`,
  );
  return {
    whole: Object.fromEntries(rows.map((r) => [r.relname, Number(r.seq_tup_read)])),
    indexScans: rows.reduce((n, r) => n + Number(r.idx_scan ?? 0), 0),
  };
}

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'slipway-agent-storage-'));
  hostDir = await builtAgentServerHost(root);
  // The project: the fixture graph, resolving @langchain/langgraph from the host's install.
  mkdirSync(path.join(root, 'src'));
  copyFileSync(GRAPH, path.join(root, 'src/agent.ts'));
  writeFileSync(
    path.join(root, 'package.json'),
    JSON.stringify({ name: 'storage-agent', private: true, type: 'module' }),
  );
  writeFileSync(path.join(root, 'langgraph.json'), JSON.stringify({ graphs: { agent: './src/agent.ts:graph' } }));
  symlinkSync(path.join(hostDir, 'node_modules'), path.join(root, 'node_modules'));
  db = await createTestDatabase();
  sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  await seedLegacyRecords();
  const prefix = testQueuePrefix('agent');
  ports = [await freePort(), await freePort()];
  await Promise.all(ports.map((p) => startHost(p, prefix)));
  clients = ports.map((p) => new Client({ apiUrl: `http://127.0.0.1:${p}` }));
}, 240_000);

afterAll(async () => {
  for (const child of servers) child.kill('SIGKILL');
  await sql?.end();
  await db?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('agent server storage: one row per record in the deployment database', () => {
  it('moves the records of the single-table storage into their tables, ends wedged runs and drops the old tables', async () => {
    const [one] = clients;
    const thread = await one!.threads.get(LEGACY_THREAD);
    expect(thread).toMatchObject({ metadata: { owner: 'legacy' }, values: { steps: ['old'] }, status: 'idle' });
    const runs = await one!.runs.list(LEGACY_THREAD);
    expect(Object.fromEntries(runs.map((r) => [r.run_id.slice(-2), r.status]))).toEqual({ a1: 'success', a2: 'error' });
    expect((await one!.assistants.get('legacy-assistant')).metadata).toEqual({ from: 'legacy' });
    expect(
      (
        await sql.query(
          `SELECT to_regclass('slipway_agent_records') AS t, to_regclass('slipway_agent_records_version') AS v`,
        )
      ).rows[0],
    ).toEqual({ t: null, v: null });
    // The thread takes runs again.
    expect(
      await one!.runs.wait(LEGACY_THREAD, 'agent', { input: { steps: ['new'], ticks: 1, tick_ms: 1 } }),
    ).toMatchObject({ steps: ['new', 'first', 'second', 'third'] });
  }, 60_000);

  it('holds one running run per thread in the database itself', async () => {
    const thread = await clients[0]!.threads.create();
    const insert = (id: string) =>
      sql.query(
        `INSERT INTO slipway_agent_runs (run_id, thread_id, assistant_id, status) VALUES ($1, $2, 'x', 'running')`,
        [id, thread.thread_id],
      );
    await insert('manual-run-1');
    await expect(insert('manual-run-2')).rejects.toMatchObject({
      code: '23505',
      constraint: 'slipway_agent_runs_one_running',
    });
    await sql.query(`DELETE FROM slipway_agent_runs WHERE run_id = 'manual-run-1'`);
  });

  it('serves reads, searches and runs at 20,000 threads without reading a table whole, busy or idle', async () => {
    await sql.query(
      `INSERT INTO slipway_agent_threads (thread_id, metadata, created_at)
                     SELECT ${SEEDED_SQL('00000000')}, jsonb_build_object('tenant', 't' || (i % 100), 'n', i), ` +
        `now() - make_interval(secs => i)
                       FROM generate_series(1, 20000) AS i`,
    );
    await sql.query(
      `INSERT INTO slipway_agent_runs (run_id, thread_id, assistant_id, status, created_at)
                     SELECT ${SEEDED_SQL('11111111')}, ${SEEDED_SQL('00000000')}, 'x', 'success', ` +
        `now() - make_interval(secs => i) FROM generate_series(1, 20000) AS i`,
    );
    await sql.query('ANALYZE slipway_agent_threads; ANALYZE slipway_agent_runs');
    // Statistics reach pg_stat_user_tables when a backend flushes them (at most 10 s after it idles).
    await new Promise((r) => setTimeout(r, 11_000));
    const before = await tableReads();

    const [one, two] = clients;
    expect((await one!.threads.get(seeded(777))).metadata).toEqual({ tenant: 't77', n: 777 });
    const tenant = await two!.threads.search({ metadata: { tenant: 't7' }, limit: 5 });
    expect(tenant.map((t) => t.thread_id)).toEqual([7, 107, 207, 307, 407].map((i) => seeded(i)));
    expect(
      (await one!.threads.search({ metadata: { tenant: 't0' }, limit: 3, sortOrder: 'asc' })).map((t) => t.thread_id),
    ).toEqual([20000, 19900, 19800].map((i) => seeded(i)));
    expect((await one!.threads.search({ limit: 2 })).map((t) => t.thread_id)).toHaveLength(2);
    expect((await two!.runs.list(seeded(42))).map((r) => r.run_id)).toEqual([seeded(42, '11111111')]);
    const fresh = await one!.threads.create({ metadata: { tenant: 'fresh' } });
    expect(
      await two!.runs.wait(fresh.thread_id, 'agent', { input: { steps: ['x'], ticks: 1, tick_ms: 1 } }),
    ).toMatchObject({ steps: ['x', 'first', 'second', 'third'] });
    // Then idle: workers polling the queue, heartbeats, sweepers.
    await new Promise((r) => setTimeout(r, 4_000));
    await new Promise((r) => setTimeout(r, 11_000));
    const after = await tableReads();
    expect(after.indexScans).toBeGreaterThan(before.indexScans); // the hosts' reads were counted…
    expect(after.whole).toEqual(before.whole); // …and none read a table whole
  }, 120_000);
});

describe("a run's end and its thread's status", () => {
  /** The run's and its thread's status, read in one snapshot. */
  const statuses = async (threadId: string, runId: string) =>
    (
      await sql.query(
        `SELECT r.status AS run, t.status AS thread FROM slipway_agent_runs r ` +
          `JOIN slipway_agent_threads t USING (thread_id) WHERE r.run_id = $1`,
        [runId],
      )
    ).rows[0] as { run: string; thread: string };

  it('are one write: while the thread row is locked the run stays running, never success beside a busy thread', async () => {
    const thread = await clients[0]!.threads.create();
    const run = await clients[0]!.runs.create(thread.thread_id, 'agent', slowInput('locked', 2, 100));
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM slipway_agent_threads WHERE thread_id = $1 FOR UPDATE', [thread.thread_id]);
      // The graph finishes (its last tick, 100 ms later its end) while the row is held; for 3 s,
      // longer than the lease (2 s), the run's end waits for the thread's write.
      await joinAll(clients[1]!, thread.thread_id, run.run_id, {
        until: (events) => customs(events).some((t) => t.node === 'third' && t.i === 1),
      });
      for (let i = 0; i < 30; i++) {
        expect(await statuses(thread.thread_id, run.run_id)).toEqual({ run: 'running', thread: 'busy' });
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
    }
    await eventually(
      () => statuses(thread.thread_id, run.run_id),
      (s) => s.run !== 'running',
      10_000,
      20,
    );
    expect(await statuses(thread.thread_id, run.run_id)).toEqual({ run: 'success', thread: 'idle' });
    const events = await joinAll(clients[0]!, thread.thread_id, run.run_id);
    expect(events.map((e) => e.event).filter((e) => e === 'error')).toEqual([]);
    expect(attempts(events)).toEqual([1]);
    expect((await clients[0]!.threads.getState(thread.thread_id)).values).toMatchObject({
      steps: ['locked', 'first', 'second', 'third'],
    });
  }, 60_000);
});

describe('agent server multitask rollback across instances', () => {
  /** Checkpoints of the thread, per run that wrote them. */
  const checkpointRuns = async (threadId: string) =>
    (
      await sql.query(`SELECT DISTINCT metadata->>'run_id' AS run_id FROM checkpoints WHERE thread_id = $1`, [threadId])
    ).rows.map((r) => r.run_id as string);

  for (const how of [
    'a second run with multitask_strategy rollback',
    'cancel with action=rollback, then a second run',
  ] as const) {
    it(`deletes a running run rolled back through the other instance by ${how}, and the second run runs on a clean thread`, async () => {
      const thread = await clients[0]!.threads.create();
      const first = await clients[0]!.runs.create(thread.thread_id, 'agent', slowInput('doomed', 10, 100));
      // Once its second node runs, its first node's checkpoint is written and the port says who runs it.
      const head = await joinAll(clients[0]!, thread.thread_id, first.run_id, {
        until: (events) => customs(events).some((t) => t.node === 'second'),
      });
      const runner = customs(head).at(-1)!.port;
      const index = ports.findIndex((p) => String(p) === runner);
      expect(index).toBeGreaterThanOrEqual(0);
      const [owner, other] = [clients[index]!, clients[1 - index]!];
      expect(await checkpointRuns(thread.thread_id)).toEqual([first.run_id]);
      const watched = joinAll(owner, thread.thread_id, first.run_id); // a joiner on the running instance

      const input = { input: { steps: ['kept'], ticks: 1, tick_ms: 1 } };
      let second: string;
      if (how === 'a second run with multitask_strategy rollback') {
        second = (await other.runs.create(thread.thread_id, 'agent', { ...input, multitaskStrategy: 'rollback' }))
          .run_id;
      } else {
        await other.runs.cancel(thread.thread_id, first.run_id, false, 'rollback');
        await eventually(
          () =>
            other.runs.get(thread.thread_id, first.run_id).then(
              () => 200,
              (err) => err.status,
            ),
          (s) => s === 404,
          20_000,
          100,
        );
        second = (await other.runs.create(thread.thread_id, 'agent', input)).run_id;
      }
      await other.runs.join(thread.thread_id, second);

      // The joiner's stream ended cleanly: no error for a rolled-back run.
      const events = await watched;
      expect(events.filter((e) => e.event === 'error')).toEqual([]);
      await expect(other.runs.get(thread.thread_id, first.run_id)).rejects.toMatchObject({ status: 404 });
      await expect(owner.runs.get(thread.thread_id, first.run_id)).rejects.toMatchObject({ status: 404 });
      expect(await checkpointRuns(thread.thread_id)).toEqual([second]);
      expect((await owner.threads.getState(thread.thread_id)).values).toEqual({
        steps: ['kept', 'first', 'second', 'third'],
        ticks: 1,
        tick_ms: 1,
      });
      expect((await owner.runs.list(thread.thread_id)).map((r) => [r.run_id, r.status])).toEqual([[second, 'success']]);
      expect((await owner.threads.get(thread.thread_id)).status).toBe('idle');
    }, 90_000);
  }
});

describe('agent server start: its database, and TTL settings of langgraph.json', () => {
  /** Starts a host on the graph config `config`; resolves with its exit code and stderr once it exits. */
  async function startWith(config: Record<string, unknown>): Promise<{ code: number | null; stderr: string }> {
    writeFileSync(
      path.join(root, 'ttl-check.json'),
      JSON.stringify({ graphs: { agent: './src/agent.ts:graph' }, ...config }),
    );
    const child = spawn(process.execPath, [path.join(hostDir, AGENT_SERVER_HOST_ENTRY), 'ttl-check.json'], {
      cwd: root,
      env: {
        PATH: process.env.PATH!,
        PORT: String(await freePort()),
        DATABASE_URI: db.url,
        REDIS_URI: 'redis://127.0.0.1:6379',
        REDIS_PREFIX: testQueuePrefix('agent-ttl'),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    servers.push(child);
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    return { code, stderr: stderr.trim() };
  }

  it('says every 5 s that it waits for a database that does not answer, and where it is, never its password', async () => {
    // Accepts connections and never answers: a database whose packets are lost after connect.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const child = spawn(process.execPath, [path.join(hostDir, AGENT_SERVER_HOST_ENTRY), 'langgraph.json'], {
      cwd: root,
      env: {
        PATH: process.env.PATH!,
        PORT: String(await freePort()),
        DATABASE_URI: `postgres://app:s3cret-pw@127.0.0.1:${port}/silent`,
        REDIS_URI: 'redis://127.0.0.1:6379',
        REDIS_PREFIX: testQueuePrefix('agent-wait'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    servers.push(child);
    let output = '';
    for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk) => (output += chunk));
    try {
      await eventually(
        () => output,
        (o) => o.includes(`agent server: still waiting for the deployment database at 127.0.0.1:${port}/silent (`),
        30_000,
        200,
      );
      expect(child.exitCode).toBeNull();
      expect(output).not.toContain('s3cret-pw');
    } finally {
      child.kill('SIGKILL');
      silent.close();
    }
  }, 60_000);

  it('stops the start with one line naming a TTL setting it cannot honour', async () => {
    const strategy = await startWith({ checkpointer: { ttl: { strategy: 'keep_latest', default_ttl: 60 } } });
    expect(strategy.code).toBe(1);
    expect(strategy.stderr.split('\n').at(-1)).toBe(
      `langgraph.json: checkpointer.ttl.strategy 'keep_latest' is not supported (only "delete")`,
    );
    const negative = await startWith({ store: { ttl: { default_ttl: -1 } } });
    expect(negative.code).toBe(1);
    expect(negative.stderr.split('\n').at(-1)).toBe(
      'langgraph.json: store.ttl.default_ttl must be a positive number of minutes',
    );
  }, 60_000);
});
