import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import {
  createDatabaseIfMissing,
  createDataSource,
  dropDatabaseIfExists,
  runMigrations,
  type DataSource,
} from '@slipway/db';
import { freePort, startProcess, type BenchProcess } from './processes.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
export const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** The services a bench stack runs, each as in production. */
const SERVICES = ['api', 'builder', 'deployer', 'edge'] as const;

/**
 * The apps domain of the bench's edge: deployments answer at `<name>.bench.test` on the edge's
 * ports of 127.0.0.1 (nothing resolves the name: clients connect to 127.0.0.1 and send it as the
 * Host and the TLS server name).
 */
export const APPS_DOMAIN = 'bench.test';

/**
 * The stack's certificate for `*.bench.test`, self-signed, and its key (PEM files), served by the edge and by the peers
 * it is compared with.
 */
export interface BenchCertificate {
  certFile: string;
  keyFile: string;
  cert: Buffer;
}

/**
 * How the services are built and run (`pnpm bench --build`):
 * - `package`: the production image's layout, `pnpm build --package` (the bundle plus production
 *   dependencies only) in a temporary directory, `node dist/main.js`;
 * - `start`: exactly what `npm start` runs (infra/scripts/start.mjs): the entries start-build.mjs
 *   compiles in the workspace (`services/<name>/dist/start.js`, built only when their sources
 *   changed since the last build, as a second `npm start` skips it), run from the repository with
 *   its dependencies and `npm start`'s defaults (NODE_ENV=production, the default log level).
 */
export const BUILD_MODES = ['package', 'start'] as const;
export type BuildMode = (typeof BUILD_MODES)[number];

export function databaseUrl(name: string): string {
  const u = new URL(SERVER);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Everything one bench run measures against, all its own: a migrated database, a BullMQ prefix,
 * the real services (compiled, `node dist/main.js`, NODE_ENV=production, logging at info as in
 * production; the api and the edge started here, the workers by the idle scenario) and the raw baseline
 * server, each as its own process. `close()` removes it all.
 */
export class BenchStack {
  readonly id = randomBytes(3).toString('hex');
  readonly dbName = `slipway_bench_${this.id}`;
  readonly prefix = `slipway_bench_${this.id}`;
  readonly key = `slw_bench_${randomBytes(24).toString('base64url')}`;
  readonly redis = new Redis(REDIS, { maxRetriesPerRequest: null });
  private readonly secretsKey = randomBytes(32).toString('base64');
  dataSource!: DataSource;
  api!: BenchProcess;
  raw!: BenchProcess;
  /** The edge, as `npm start` runs it: HTTP and HTTPS (the stack's certificate) on ports of 127.0.0.1. */
  edge!: BenchProcess;
  edgePorts!: { http: number; https: number };
  certificate!: BenchCertificate;
  listenerId!: string;
  readonly dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-'));
  /** Local git repositories a `local` repohost integration lists (bench/support/pipeline.ts). */
  readonly reposRoot = path.join(this.dataDir, 'repos');
  private worker: Worker | null = null;
  /** `start` mode: the compiled entry of each service, as start-build.mjs names them. */
  private startEntries: Record<string, string> = {};
  private readonly handed = new Map<string, number>();
  private readonly waiters = new Map<string, (at: number) => void>();

  constructor(readonly build: BuildMode = 'package') {}

  /** `nodeArgs` go before the api's and the edge's entry files (e.g. `--cpu-prof` for `pnpm bench --profile`). */
  async start(env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<void> {
    mkdirSync(this.reposRoot, { recursive: true });
    await createDatabaseIfMissing(SERVER, this.dbName);
    this.dataSource = createDataSource({
      url: databaseUrl(this.dbName),
      poolSize: 4,
      applicationName: 'slipway-bench',
    });
    await this.dataSource.initialize();
    await runMigrations(this.dataSource);
    if (this.build === 'package') {
      // The production layout (as in the image): the bundle plus production dependencies only.
      execFileSync(
        process.execPath,
        ['infra/scripts/build.mjs', '--package', path.join(this.dataDir, 'app'), ...SERVICES],
        { cwd: ROOT, stdio: 'ignore' },
      );
    } else {
      // What `npm start` does before it runs the services: start-build.mjs's own build and stamp.
      const script = `import { START_ENTRIES, ensureStartBuild } from './infra/scripts/start-build.mjs';
        await ensureStartBuild();
        process.stdout.write(JSON.stringify(Object.fromEntries(Object.entries(START_ENTRIES).map(([k, v]) => [k, v.built]))));`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      this.startEntries = JSON.parse(out);
    }
    this.certificate = selfSignedCertificate(path.join(this.dataDir, 'tls'));
    // Chosen before any service starts: every one of them names the deployments' `url`s from them.
    this.edgePorts = { http: await freePort(), https: await freePort() };
    const [apiPort, rawPort] = [await freePort(), await freePort()];
    this.api = await startProcess(
      [...nodeArgs, this.entryOf('api')],
      {
        ...this.serviceEnv,
        SLIPWAY_BOOTSTRAP_API_KEY: this.key,
        PORT: String(apiPort),
        // The bench is one client hammering the api with one key: budgets raised so it never
        // meets a 429, but on, so every request is charged to its budget in Redis as in
        // production (their grants included: docs/api.md, Errors).
        SLIPWAY_RATE_LIMIT_PER_KEY: '1000000000',
        SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT: '1000000000',
        SLIPWAY_RATE_LIMIT_PER_ADDRESS: '1000000000',
        // Scaling scenarios create far more deployments than a workspace's default quota.
        SLIPWAY_QUOTA_DEPLOYMENTS: '100000000',
        SLIPWAY_QUOTA_UPLOADS_PER_DAY: '100000000',
        ...env,
      },
      apiPort,
    );
    this.raw = await startProcess(
      ['--import', 'tsx', path.join(ROOT, 'bench/support/raw-server.ts')],
      { DATABASE_URL: databaseUrl(this.dbName), PORT: String(rawPort) },
      rawPort,
    );
    // The edge has no health path: it is up when its HTTP port answers (404 for a host that names no deployment).
    this.edge = await startProcess([...nodeArgs, this.entryOf('edge')], this.serviceEnv, this.edgePorts.http, '/', 404);
    this.listenerId = await this.addListener('bench');
  }

  /** A new listener (`bench-<name>-<stack id>`); its id. */
  async addListener(name: string): Promise<string> {
    const res = await this.request('POST', '/v2/listeners', {
      compute_type: 'k8s',
      compute_id: `bench-${name}-${this.id}`,
      compute_config: { k8s_namespaces: ['bench'] },
    });
    return res.id;
  }

  /**
   * The compiled entry file of a service: laid out for production (`node dist/main.js`), or what
   * `npm start` runs (`services/<name>/dist/start.js` in the repository).
   */
  entryOf(service: (typeof SERVICES)[number]): string {
    if (this.build === 'start') return path.join(ROOT, this.startEntries[service]!);
    return path.join(this.dataDir, 'app', service, 'dist/main.js');
  }

  /**
   * What every Slipway process of this stack runs with: production mode, logging at info (set
   * explicitly as a production deployment's environment does; `npm start` leaves it to the
   * default, which is info too).
   */
  get serviceEnv(): Record<string, string> {
    return {
      ...(this.build === 'package' ? { LOG_LEVEL: 'info' } : {}),
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl(this.dbName),
      REDIS_URL: REDIS,
      SLIPWAY_QUEUE_PREFIX: this.prefix,
      SLIPWAY_SECRETS_KEY: this.secretsKey,
      SLIPWAY_DATA_DIR: this.dataDir,
      SLIPWAY_LOCAL_REPOS_ROOT: this.reposRoot,
      // The edge as users run it, with the operator's certificate: deployments' `url`s are
      // `https://<name>.bench.test:<https port>`. The serving scenario reads their serving ports
      // from the database (what its "serving URL" rows measure) and measures the edge beside them.
      SLIPWAY_EDGE_HOST: '127.0.0.1',
      SLIPWAY_EDGE_HTTP_PORT: String(this.edgePorts.http),
      SLIPWAY_EDGE_HTTPS_PORT: String(this.edgePorts.https),
      SLIPWAY_APPS_DOMAIN: APPS_DOMAIN,
      SLIPWAY_TLS_CERT_FILE: this.certificate.certFile,
      SLIPWAY_TLS_KEY_FILE: this.certificate.keyFile,
    };
  }

  /** One API call with the bench's admin key; throws on a non-2xx answer. */
  async request(method: string, urlPath: string, body?: unknown): Promise<any> {
    // A keep-alive connection the api closes as idle just when a request goes out fails with
    // "other side closed" before any answer: sent once more, with an Idempotency-Key so a write
    // that did arrive is answered, not repeated.
    const idempotency: Record<string, string> = method === 'GET' ? {} : { 'idempotency-key': randomUUID() };
    const send = () =>
      fetch(this.api.url + urlPath, {
        method,
        headers: { 'x-api-key': this.key, ...idempotency, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    const res = await send().catch((err: { cause?: { code?: string } }) =>
      err.cause?.code === 'UND_ERR_SOCKET' ? send() : Promise.reject(err),
    );
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${urlPath} → ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  /** A create body for an image deployment with one secret (what the issue measured), on the bench's listener unless told. */
  createBody(name: string, listenerId = this.listenerId): Record<string, unknown> {
    return {
      name,
      source: 'external_container',
      source_config: { listener_id: listenerId },
      source_revision_config: { image_uri: 'registry.example/agent:1' },
      secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-bench-secret' }],
    };
  }

  /**
   * Plays the deployer: a BullMQ worker on the api's `rollouts` queue that records when each
   * revision's rollout job reached a worker. That moment is "handed over".
   */
  async startWorker(concurrency = 50): Promise<void> {
    this.worker = new Worker(
      'rollouts',
      async (job: Job) => {
        const revisionId = job.data?.revisionId as string | undefined;
        if (job.name !== 'rollout.revision' || !revisionId) return;
        const at = performance.now();
        this.handed.set(revisionId, at);
        this.waiters.get(revisionId)?.(at);
      },
      { connection: this.redis, prefix: this.prefix, concurrency },
    );
    await this.worker.waitUntilReady();
  }

  /** Resolves with the performance.now() at which the revision's job reached the worker. */
  handedOver(revisionId: string, timeoutMs = 60_000): Promise<number> {
    const at = this.handed.get(revisionId);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`revision ${revisionId} was not handed over within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiters.set(revisionId, (t) => {
        clearTimeout(timer);
        this.waiters.delete(revisionId);
        resolve(t);
      });
    });
  }

  get handedCount(): number {
    return this.handed.size;
  }

  /** The performance.now() of the `n`-th job (0-based, in arrival order) to reach the worker. */
  handedAt(n: number): number | undefined {
    let i = 0;
    for (const at of this.handed.values()) if (i++ === n) return at;
    return undefined;
  }

  async close(): Promise<void> {
    await this.worker?.close().catch(() => {});
    await Promise.allSettled([this.api?.stop(), this.raw?.stop(), this.edge?.stop()]);
    await this.dataSource?.destroy().catch(() => {});
    await dropDatabaseIfExists(SERVER, this.dbName).catch(() => {});
    await deleteKeys(this.redis, `${this.prefix}:*`);
    this.redis.disconnect();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * A self-signed certificate for `*.bench.test` (and `bench.test`), made with openssl: an ECDSA
 * P-256 key, the kind Caddy and Let's Encrypt issue by default. The same pair is served by the
 * edge, nginx and Caddy, so a handshake costs each of them the same signature.
 */
function selfSignedCertificate(dir: string): BenchCertificate {
  mkdirSync(dir, { recursive: true });
  const [certFile, keyFile] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
  const args = [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=*.${APPS_DOMAIN}`,
  ];
  args.push('-addext', `subjectAltName=DNS:*.${APPS_DOMAIN},DNS:${APPS_DOMAIN}`, '-keyout', keyFile, '-out', certFile);
  execFileSync('openssl', args, { stdio: 'ignore' });
  return { certFile, keyFile, cert: readFileSync(certFile) };
}

/** Deletes this run's keys only (the Redis is shared: never FLUSHDB). */
export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}
