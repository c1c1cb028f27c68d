// The agent server of a LangGraph.js project (docs/architecture.md, Runtimes): the builder copies
// this directory into the artifact of a project whose graph config names JS/TS graphs and that has
// no "start" script, installs it (package-lock.json), and the process runtime starts
//   node <this file> <graph config file name>
// in the graph config's directory, with PORT and DATABASE_URI set.
//
// It runs the published @langchain/langgraph-api server (the LangGraph Server API the SDKs and
// Studio speak) with every piece of state in the deployment's own Postgres, so all instances of a
// deployment, and every later revision, see the same assistants, threads, runs, checkpoints and
// store:
// - checkpoints: @langchain/langgraph-checkpoint-postgres's PostgresSaver;
// - store: its PostgresStore;
// - assistants, threads, runs: the server's own operations, with their records kept in a table
//   (one row per record, re-read when another instance changed something, written back when this
//   one did) instead of a local JSON file.
// A run's events travel in-process from the worker to the waiting or streaming request, so a run
// is executed by the instance it was created through; the claim in Postgres makes sure it is
// executed once.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const apiDir = path.dirname(require.resolve('@langchain/langgraph-api/package.json'));
const apiModule = (file) => import(pathToFileURL(path.join(apiDir, 'dist', file)).href);

const configFile = path.resolve(process.argv[2] ?? 'langgraph.json');
const cwd = path.dirname(configFile);
const config = JSON.parse(readFileSync(configFile, 'utf8'));
const graphFiles = Object.values(config.graphs).map((g) => (typeof g === 'string' ? g : g.path).split(':')[0]);

// TypeScript graphs load through tsx, and every import of @langchain/langgraph (the server's own
// included) resolves to the project's copy: one graph runtime, the one the project was built with.
const { register: registerTsx } = await import('tsx/esm/api');
registerTsx();
register(pathToFileURL(path.join(apiDir, 'dist/graph/load.hooks.mjs')).href, import.meta.url, {
  parentURL: 'data:',
  data: { parentURL: pathToFileURL(path.join(cwd, graphFiles[0] ?? 'index.mjs')).href },
});

// Every graph is imported now, before anything listens: a graph that throws when imported (a
// top-level error, an env var it reads that is missing) ends the start with one line naming it,
// the last of the log, which the deployer quotes first in the revision's status message (the
// pattern START_FAILURE in services/deployer/src/process-driver/process-driver.ts). The server's
// own registration imports the same URLs later and gets these cached modules.
const { registerSdkLogger } = await apiModule('logging.mjs');
registerSdkLogger(); // as the server does before it loads graphs: a graph may take the logger at top level
for (const [graphId, graph] of Object.entries(config.graphs)) {
  const spec = typeof graph === 'string' ? graph : graph.path;
  const [file, exportName = 'default'] = spec.split(':', 2);
  let failure;
  try {
    const module = await import(pathToFileURL(path.resolve(cwd, file)).href);
    if (module[exportName] == null) failure = `the module has no export '${exportName}'`;
  } catch (err) {
    if (err instanceof Error && err.stack) console.error(err.stack);
    failure = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }
  if (failure) {
    console.error(`Graph '${graphId}' (${spec}) failed to load at start: ${failure.split('\n')[0]}`);
    process.exit(1);
  }
}

const databaseUri = process.env.DATABASE_URI;
if (!databaseUri) {
  console.error('DATABASE_URI is not set: the agent server keeps its threads in the deployment database.');
  process.exit(1);
}

const { default: pg } = await import('pg');
const { PostgresSaver } = await import('@langchain/langgraph-checkpoint-postgres');
const { PostgresStore } = await import('@langchain/langgraph-checkpoint-postgres/store');
const { startServer, StartServerSchema } = await import('@langchain/langgraph-api/server');
const { checkpointer } = await apiModule('storage/checkpoint.mjs');
const { store } = await apiModule('storage/store.mjs');
const { FileSystemOps, StreamManager } = await apiModule('storage/ops.mjs');
const { FileSystemPersistence, serialize, deserialize } = await apiModule('storage/persist.mjs');

const pool = new pg.Pool({ connectionString: databaseUri, max: 5 });
const INSTANCE_ID = randomUUID();

// ---- checkpoints and store: the server's module singletons, pointed at Postgres -------------
const saver = PostgresSaver.fromConnString(databaseUri);
const pgStore = PostgresStore.fromConnString(databaseUri);

// Instances of a deployment start together (min_scale > 1, rollouts): their schema set-ups
// (checkpoint and store migrations, the records tables) would race on the same tables, so they
// take turns under one advisory lock, held by a connection of its own.
const SCHEMA_LOCK = 0x534c4950; // "SLIP"
const lockClient = await pool.connect();
try {
  await lockClient.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK]);
  await saver.setup();
  await pgStore.setup();
  await pool.query(`
    CREATE TABLE IF NOT EXISTS slipway_agent_records (
      kind text NOT NULL, id text NOT NULL, data text NOT NULL,
      owner text, claimed_at timestamptz,
      PRIMARY KEY (kind, id));
    CREATE TABLE IF NOT EXISTS slipway_agent_records_version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version bigint NOT NULL);
    INSERT INTO slipway_agent_records_version (version) VALUES (0) ON CONFLICT DO NOTHING;`);
} finally {
  await lockClient.query('SELECT pg_advisory_unlock($1)', [SCHEMA_LOCK]).catch(() => {});
  lockClient.release();
}
const EXCLUDED_METADATA = ['checkpoint_ns', 'checkpoint_id', 'run_id', 'thread_id'];
Object.assign(checkpointer, {
  initialize: async () => ({ flush: async () => {} }),
  getTuple: (c) => saver.getTuple(c),
  list: (c, o) => saver.list(c, o),
  putWrites: (c, w, t) => saver.putWrites(c, w, t),
  // As the server's own saver does: the run's configurable (run_id, graph_id, user fields)
  // goes into the checkpoint metadata, where history filters look for it.
  put: (c, checkpoint, metadata, versions) =>
    saver.put(
      c,
      checkpoint,
      {
        ...Object.fromEntries(Object.entries(c.configurable ?? {}).filter(([k]) => !k.startsWith('__') && !EXCLUDED_METADATA.includes(k))),
        ...c.metadata,
        ...metadata,
      },
      versions,
    ),
  getNextVersion: (current, channel) => saver.getNextVersion(current, channel),
  deleteThread: (threadId) => saver.deleteThread(threadId),
  delete: async (threadId, runId) => {
    if (runId == null) return saver.deleteThread(threadId);
    await pool.query(`DELETE FROM checkpoint_writes w USING checkpoints c
                       WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
                         AND c.thread_id = $1 AND c.metadata->>'run_id' = $2`, [threadId, runId]);
    await pool.query(`DELETE FROM checkpoints WHERE thread_id = $1 AND metadata->>'run_id' = $2`, [threadId, runId]);
  },
  copy: async (threadId, newThreadId) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
                          SELECT $2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
                                 replace(metadata::text, $1, $2)::jsonb FROM checkpoints WHERE thread_id = $1`, [threadId, newThreadId]);
      await client.query(`INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
                          SELECT $2, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = $1`, [threadId, newThreadId]);
      await client.query(`INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
                          SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob FROM checkpoint_writes WHERE thread_id = $1`, [threadId, newThreadId]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    } finally {
      client.release();
    }
  },
  // POST /internal/truncate would wipe every thread of the deployment: not through this server.
  clear: () => {},
});

Object.assign(store, {
  initialize: async () => ({ flush: async () => {} }),
  batch: (ops) => pgStore.batch(ops),
  get: (...a) => pgStore.get(...a),
  search: (...a) => pgStore.search(...a),
  put: (...a) => pgStore.put(...a),
  delete: (...a) => pgStore.delete(...a),
  listNamespaces: (...a) => pgStore.listNamespaces(...a),
  clear: async () => {},
});

// ---- assistants, threads, runs: one row per record -------------------------------------------
const COLLECTIONS = ['assistants', 'threads', 'runs', 'retry_counter'];
const emptyStore = () => ({ runs: {}, threads: {}, assistants: {}, assistant_versions: [], retry_counter: {} });
const versionKey = (v) => `${v.assistant_id}:${v.version}`;

/**
 * The server's operations keep their records in one in-memory object; this keeps that object in
 * step with the table: before each operation it re-reads the records another instance changed
 * (when the table's version moved), after it writes back the records this one changed.
 */
class PostgresRecords extends FileSystemPersistence {
  snapshot = new Map();
  owners = new Map();
  version = -1n;
  writing = Promise.resolve();

  constructor() {
    super('slipway_agent_records', emptyStore);
  }

  async initialize() {
    this.filepath = 'postgres';
    this.data = emptyStore();
    await this.refresh();
    return this;
  }

  *records() {
    for (const kind of COLLECTIONS) for (const [id, value] of Object.entries(this.data[kind])) yield [`${kind}\0${id}`, kind, id, value];
    for (const v of this.data.assistant_versions) yield [`assistant_versions\0${versionKey(v)}`, 'assistant_versions', versionKey(v), v];
  }

  async refresh() {
    const { rows: [{ version }] } = await pool.query('SELECT version FROM slipway_agent_records_version');
    if (BigInt(version) === this.version) return;
    const { rows } = await pool.query('SELECT kind, id, data, owner FROM slipway_agent_records');
    const seen = new Set();
    for (const row of rows) {
      const key = `${row.kind}\0${row.id}`;
      seen.add(key);
      this.owners.set(key, row.owner);
      if (this.snapshot.get(key) === row.data) continue;
      const value = await deserialize(row.data);
      if (row.kind === 'assistant_versions') {
        const at = this.data.assistant_versions.findIndex((v) => versionKey(v) === row.id);
        if (at >= 0) this.data.assistant_versions[at] = value;
        else this.data.assistant_versions.push(value);
      } else {
        this.data[row.kind][row.id] = value;
      }
      this.snapshot.set(key, row.data);
    }
    for (const key of [...this.snapshot.keys()]) {
      if (seen.has(key)) continue;
      const [kind, id] = key.split('\0');
      if (kind === 'assistant_versions') this.data.assistant_versions = this.data.assistant_versions.filter((v) => versionKey(v) !== id);
      else delete this.data[kind][id];
      this.snapshot.delete(key);
    }
    this.version = BigInt(version);
  }

  /** Writes the records changed since the last read or write, one at a time per instance. */
  persist() {
    clearTimeout(this.flushTimeout);
    this.writing = this.writing.then(() => this.write()).catch((err) => console.error('could not save the agent server records', err));
    return this.writing;
  }

  async write() {
    const current = new Map();
    for (const [key, kind, id, value] of this.records()) current.set(key, { kind, id, data: serialize(value) });
    const changed = [...current.entries()].filter(([key, r]) => this.snapshot.get(key) !== r.data);
    const removed = [...this.snapshot.keys()].filter((key) => !current.has(key));
    if (!changed.length && !removed.length) return;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      for (const [, r] of changed) {
        await client.query(
          `INSERT INTO slipway_agent_records (kind, id, data, owner) VALUES ($1, $2, $3, $4)
           ON CONFLICT (kind, id) DO UPDATE SET data = EXCLUDED.data`,
          [r.kind, r.id, r.data, INSTANCE_ID],
        );
      }
      for (const key of removed) {
        const [kind, id] = key.split('\0');
        await client.query('DELETE FROM slipway_agent_records WHERE kind = $1 AND id = $2', [kind, id]);
      }
      const { rows: [{ version }] } = await client.query('UPDATE slipway_agent_records_version SET version = version + 1 RETURNING version');
      await client.query('COMMIT');
      for (const [key, r] of changed) {
        this.snapshot.set(key, r.data);
        if (!this.owners.has(key)) this.owners.set(key, INSTANCE_ID);
      }
      for (const key of removed) this.snapshot.delete(key);
      // Only when nobody else wrote in between: otherwise the next refresh reads their records.
      if (BigInt(version) === this.version + 1n) this.version = BigInt(version);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  schedulePersist() {
    void this.persist();
  }

  async flush() {
    await this.persist();
  }

  async with(fn) {
    await this.refresh();
    try {
      return await fn(this.data);
    } finally {
      await this.persist();
    }
  }

  async *withGenerator(fn) {
    await this.refresh();
    try {
      const gen = typeof fn === 'function' ? fn(this.data, { schedulePersist: () => this.schedulePersist() }) : fn;
      yield* gen;
    } finally {
      await this.persist();
    }
  }

  /** Marks a run of this instance claimed; false when it was claimed before (or is not ours). */
  async claimRun(runId) {
    const { rowCount } = await pool.query(
      `UPDATE slipway_agent_records SET claimed_at = now() WHERE kind = 'runs' AND id = $1 AND owner = $2 AND claimed_at IS NULL`,
      [runId, INSTANCE_ID],
    );
    return rowCount === 1;
  }
}

const records = await new PostgresRecords().initialize();
const ops = new FileSystemOps(records);
// POST /internal/truncate would wipe every record of the deployment: not through this server.
ops.truncate = async () => {};

// A run's stream lives in the process that created it: only that instance executes it, and only
// once (the claim), whatever the number of workers and instances.
ops.runs.next = async function* next() {
  await records.refresh();
  const STORE = records.data;
  const now = new Date();
  const pending = Object.values(STORE.runs)
    .filter((run) => run.status === 'pending' && run.created_at < now && records.owners.get(`runs\0${run.run_id}`) === INSTANCE_ID)
    .sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
  for (const run of pending) {
    if (StreamManager.isLocked(run.run_id)) continue;
    if (Object.values(STORE.runs).some((r) => r.thread_id === run.thread_id && r.status === 'running')) continue;
    if (!STORE.threads[run.thread_id]) continue;
    if (!(await records.claimRun(run.run_id))) continue;
    const signal = StreamManager.lock(run.run_id);
    try {
      STORE.retry_counter[run.run_id] = (STORE.retry_counter[run.run_id] ?? 0) + 1;
      run.status = 'running';
      await records.persist();
      yield { run, attempt: STORE.retry_counter[run.run_id], signal };
    } finally {
      StreamManager.unlock(run.run_id);
    }
  }
};

const port = Number(process.env.PORT ?? 8000);
const options = StartServerSchema.parse({
  port,
  // Loopback only, whatever the environment says: requests reach it through the serving proxy,
  // which checks the workspace key; an instance port open to the network would skip that.
  host: '127.0.0.1',
  cwd,
  nWorkers: Number(process.env.N_JOBS_PER_WORKER ?? 4),
  graphs: config.graphs,
  ...(config.auth ? { auth: config.auth } : {}),
  ...(config.http ? { http: config.http } : {}),
});
const { host } = await startServer(options, { ops });
console.log(`agent server listening on ${host} (instance ${INSTANCE_ID})`);

const shutdown = async () => {
  await records.flush().catch(() => {});
  await Promise.allSettled([pool.end(), saver.end?.(), pgStore.end?.()]);
  process.exit(0);
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
