import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Registry } from 'prom-client';
import { ApiKeyCache, RateLimits } from '@slipway/access';
import { ingestCredential } from '@slipway/crypto';
import { createDatabaseIfMissing, dropDatabaseIfExists } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { RevisionFixtures } from '@slipway/pipeline';
import { ServingProxy } from '@slipway/runtime';
import { IngestSlots, TraceIntake } from '@slipway/tracing';
import { AGENT_SERVER_HOST_ENTRY, copyAgentServerHost } from '../../services/builder/src/agent-server-host.js';
import { copyHostWithInstall } from '../../services/builder/src/host-install.js';
import { TRACE_FRONT_MAX_IN_FLIGHT } from '../../services/deployer/src/provisioning/deployment-data-access.js';
import { TraceFront } from '../../services/deployer/src/provisioning/trace-front.js';
import { ServingAuth } from '../../services/deployer/src/serving-auth.js';
import { freePort, startProcess, type BenchProcess } from './processes.js';
import { databaseUrl, deleteKeys, REDIS, ROOT, SERVER, type BenchStack } from './stack.js';

/** The agent server host (services/agent-server): its program and its own installed dependencies. */
const HOST = path.join(ROOT, 'services/agent-server');

/**
 * The host compiled as the builder copies it into an artifact; returns its directory. Its
 * dependencies are the builder's install in SLIPWAY_AGENT_SERVER_HOST_CACHE when that is set (the
 * test run's smoke bench shares the one install its builders make), else HOST's own (installed
 * once, linked).
 */
export async function compiledHost(into: string): Promise<string> {
  const cache = process.env.SLIPWAY_AGENT_SERVER_HOST_CACHE;
  if (cache) return copyHostWithInstall(into, cache, true);
  const dir = await copyAgentServerHost(into);
  installHostDependencies();
  symlinkSync(path.join(HOST, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

/** The graph both servers serve: one node, no model, so what is measured is the serving. */
const GRAPH = `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ n: Annotation({ reducer: (_, b) => b, default: () => 0 }) });
export const graph = new StateGraph(State).addNode('step', (s) => ({ n: s.n + 1 })).addEdge(START, 'step').addEdge('step', END).compile();
`;

/**
 * What the agent-server scenario measures against, all its own: an artifact laid out as the
 * builder lays one out (the graph config, the graph, the host's dependencies), one Slipway agent
 * server instance (the host, as the process runtime starts it) on a database of its own and a
 * Redis prefix of its own, the deployment's serving proxy in front of it (the deployer's
 * ServingProxy with its ServingAuth: every request's API key checked against the bench stack's
 * control-plane database, as on a deployment URL), and upstream's own server with its in-memory
 * storage serving the same graph. And a second instance of it, tracing as deployed instances
 * do: its LangSmith variables point at a trace front (the deployer's TraceFront) writing into
 * the deployment's tracing project. `close()` removes it all.
 */
export class AgentServerBench {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-agent-'));
  /** The compiled host, with its installed dependencies (compiledHost). */
  private hostDir!: string;
  private readonly dbName: string;
  private readonly prefix: string;
  host!: BenchProcess;
  /** The same server with tracing on, on a database and Redis prefix of its own. */
  traced!: BenchProcess;
  upstream!: BenchProcess;
  front!: TraceFront;
  /** The bench deployment's tracing project: where the traced instance's runs land. */
  tracingProjectId!: string;
  proxy!: ServingProxy;
  proxyUrl!: string;
  db!: pg.Pool;

  constructor(private readonly stack: BenchStack) {
    this.dbName = `${stack.dbName}_agent`;
    this.prefix = `${stack.prefix}_agent`;
  }

  get configFile(): string {
    return path.join(this.dir, 'app/langgraph.json');
  }

  async start(): Promise<void> {
    this.hostDir = await compiledHost(this.dir);
    const entry = path.join(this.hostDir, AGENT_SERVER_HOST_ENTRY);
    this.writeArtifact(entry);
    const deploymentId = await this.deployment();
    await createDatabaseIfMissing(SERVER, this.dbName);
    this.db = new pg.Pool({ connectionString: databaseUrl(this.dbName), max: 4 });
    // An idle connection the server ends (its database dropped at close, a session ended from
    // outside) is an error on the pool with no request waiting: noted, never the bench's crash.
    this.db.on('error', (err) => console.warn(`[bench] agent database connection ended: ${err.message}`));
    const home = path.join(this.dir, 'home');
    mkdirSync(home);
    const [hostPort, upstreamPort, proxyPort] = [await freePort(), await freePort(), await freePort()];
    const common = { NODE_ENV: 'production', HOME: home };
    this.host = await startProcess(
      [entry, this.configFile],
      {
        ...common,
        PORT: String(hostPort),
        DATABASE_URI: databaseUrl(this.dbName),
        REDIS_URI: REDIS,
        REDIS_PREFIX: this.prefix,
      },
      hostPort,
      '/ok',
    );
    this.upstream = await startProcess(
      [path.join(ROOT, 'bench/support/upstream-agent-server.mjs'), this.configFile, this.hostDir],
      { ...common, PORT: String(upstreamPort) },
      upstreamPort,
      '/ok',
    );
    this.traced = await this.startTraced(entry, deploymentId, common);

    const log = createLogger({ name: 'bench-serving-proxy', level: 'warn' });
    const auth = new ServingAuth({
      dataSource: this.stack.dataSource,
      keys: new ApiKeyCache(this.stack.dataSource, 1_000, log),
      // Budgets off, as the bench's api runs (one client, one key); the lockout check stays.
      limits: new RateLimits({
        settings: {
          windowSeconds: 60,
          perKey: 0,
          perListenerAgent: 0,
          perAddress: 0,
          authFailures: 20,
          authFailureWindowSeconds: 300,
        },
        redis: this.stack.redis,
        keyPrefix: this.stack.prefix,
        log,
        registry: new Registry(),
      }),
    });
    this.proxy = new ServingProxy({ host: '127.0.0.1', port: proxyPort, authorize: auth.forDeployment(deploymentId) });
    this.proxy.setTargets([{ host: '127.0.0.1', port: hostPort }]);
    await this.proxy.listen();
    this.proxyUrl = `http://127.0.0.1:${proxyPort}`;
  }

  /**
   * Adds `count` threads to the instance's database, each with one finished run and its values,
   * as runs.wait leaves them, then analyses the tables (a running database's autovacuum would).
   */
  async seedThreads(count: number): Promise<string[]> {
    const { rows } = await this.db.query<{ thread_id: string }>(
      `WITH t AS (
         INSERT INTO slipway_agent_threads (thread_id, status, metadata, "values")
         SELECT gen_random_uuid()::text, 'idle', jsonb_build_object('graph_id', 'agent', 'user', ` +
        `'u' || (g % 100)), jsonb_build_object('n', g)
           FROM generate_series(1, $1::int) g
         RETURNING thread_id)
       INSERT INTO slipway_agent_runs (run_id, thread_id, assistant_id, status, kwargs)
       SELECT gen_random_uuid()::text, thread_id, 'fe096781-5601-53d2-b2f6-0d3403f7e9ca', 'success', '{"input":{"n":1}}' FROM t
       RETURNING thread_id`,
      [count],
    );
    await this.db.query('ANALYZE slipway_agent_threads; ANALYZE slipway_agent_runs');
    return rows.map((r) => r.thread_id);
  }

  /** Runs the traced instance wrote to the deployment's project so far. */
  async tracedRuns(): Promise<number> {
    const [row] = await this.stack.dataSource.query(
      `SELECT count(*)::int AS n FROM tracing_runs WHERE project_id = $1`,
      [this.tracingProjectId],
    );
    return row.n;
  }

  /** The traced instance and its trace front, as the deployer gives a deployed instance both. */
  private async startTraced(
    entry: string,
    deploymentId: string,
    common: Record<string, string>,
  ): Promise<BenchProcess> {
    const [{ workspace_id: workspaceId, tracing_project_id: projectId, name }] = await this.stack.dataSource.query(
      `SELECT workspace_id, tracing_project_id, name FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    this.tracingProjectId = projectId;
    const secretsKey = randomBytes(32);
    this.front = new TraceFront({
      host: '127.0.0.1',
      port: await freePort(),
      deploymentId,
      target: async () => ({ workspaceId, projectId }),
      intake: new TraceIntake(this.stack.dataSource),
      secretsKeys: [secretsKey],
      slots: new IngestSlots(TRACE_FRONT_MAX_IN_FLIGHT),
      version: 'bench',
      onError: (err) => console.error('trace front:', err),
    });
    await this.front.listen();
    await createDatabaseIfMissing(SERVER, `${this.dbName}_traced`);
    const port = await freePort();
    return startProcess(
      [entry, this.configFile],
      {
        ...common,
        PORT: String(port),
        DATABASE_URI: databaseUrl(`${this.dbName}_traced`),
        REDIS_URI: REDIS,
        REDIS_PREFIX: `${this.prefix}_traced`,
        LANGSMITH_TRACING: 'true',
        LANGSMITH_ENDPOINT: `http://127.0.0.1:${this.front.port}/api/v1`,
        LANGSMITH_API_KEY: ingestCredential(secretsKey, deploymentId),
        LANGSMITH_PROJECT: name,
        LANGCHAIN_REVISION_ID: 'bench',
      },
      port,
      '/ok',
    );
  }

  async close(): Promise<void> {
    await this.proxy?.close().catch(() => {});
    await Promise.allSettled([this.host?.stop(), this.traced?.stop(), this.upstream?.stop()]);
    await this.front?.close().catch(() => {});
    await this.db?.end().catch(() => {});
    await dropDatabaseIfExists(SERVER, this.dbName).catch(() => {});
    await dropDatabaseIfExists(SERVER, `${this.dbName}_traced`).catch(() => {});
    await deleteKeys(this.stack.redis, `${this.prefix}*`);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** `artifact.json` and `app/` as the builder writes them for an agent-server project. */
  private writeArtifact(hostEntry: string): void {
    const app = path.join(this.dir, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'agent.mjs'), GRAPH);
    writeFileSync(this.configFile, JSON.stringify({ graphs: { agent: './agent.mjs:graph' } }));
    // The graph imports the host's @langchain/langgraph: one copy, as the builder's install makes it.
    symlinkSync(path.join(this.hostDir, 'node_modules'), path.join(app, 'node_modules'));
    const manifest = {
      version: 1,
      revision_id: 'bench',
      commit: null,
      source: { type: 'upload', object_path: 'bench' },
      graph_config_path: 'langgraph.json',
      graphs: { agent: './agent.mjs:graph' },
      env: null,
      node_version: null,
      start: { command: 'node', args: [hostEntry, 'langgraph.json'], cwd: '.' },
      agent_server: { auth_path: null },
      built_at: new Date().toISOString(),
    };
    writeFileSync(path.join(this.dir, 'artifact.json'), JSON.stringify(manifest));
  }

  /** A deployment of the bench's workspace whose active revision is that artifact: its URL requires a key. */
  private async deployment(): Promise<string> {
    const created = await this.stack.request(
      'POST',
      '/v2/deployments',
      this.stack.createBody(`agent-bench-${this.stack.id}`),
    );
    await new RevisionFixtures(this.stack.dataSource.manager).serveArtifact(
      created.id,
      created.latest_revision_id,
      this.dir,
    );
    return created.id;
  }
}

/** The host's locked dependencies (package-lock.json), installed once as `pnpm typecheck:agent-server` installs them. */
function installHostDependencies(): void {
  if (existsSync(path.join(HOST, 'node_modules/@langchain/langgraph-api/package.json'))) return;
  execFileSync('npm', ['ci', '--prefix', HOST, '--no-audit', '--no-fund', '--ignore-scripts'], {
    stdio: 'ignore',
    timeout: 300_000,
  });
}
