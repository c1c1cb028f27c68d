import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { START_ENTRIES } from '../../infra/scripts/start-build.mjs';
import type { TestApi } from './test-api.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export type ServiceName = 'api' | 'builder' | 'deployer' | 'listener-agent' | 'edge';

export interface ServiceProcess {
  name: ServiceName;
  child: ChildProcess;
  /** Everything the process printed (its JSON log lines), so far. */
  output: () => string;
  /** Resolves with the exit code/signal once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until a line of output matches. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
}

/**
 * Environment that points a real service process at a test's own database, Redis prefix and
 * secrets key, with pipeline timings shortened so deadlines and recovery happen within a test.
 */
export function serviceEnv(api: TestApi, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    NODE_ENV: 'test',
    DATABASE_URL: api.database.url,
    REDIS_URL: api.config.redisUrl,
    SLIPWAY_QUEUE_PREFIX: api.config.queuePrefix,
    SLIPWAY_SECRETS_KEY: api.config.secretsKey.key.toString('base64'),
    SLIPWAY_DATA_DIR: api.config.dataDir,
    SLIPWAY_SANDBOX_UID_MIN: String(api.config.sandbox.uidMin),
    SLIPWAY_SANDBOX_UID_MAX: String(api.config.sandbox.uidMax),
    SLIPWAY_SANDBOX_SUBNET: api.config.sandbox.subnet,
    SLIPWAY_SANDBOX_ALLOW_CIDRS: api.config.sandbox.allowCidrs.join(','),
    // The builder checks clones of `local` integrations against the same root as the api.
    SLIPWAY_LOCAL_REPOS_ROOT: api.config.localReposRoot,
    SLIPWAY_AGENT_SERVER_HOST_CACHE: api.config.agentServerHostCache,
    SLIPWAY_OUTBOUND_ALLOW_HOSTS: api.config.outbound.allowHosts.join(','),
    LOG_LEVEL: 'debug',
    SLIPWAY_RECONCILE_INTERVAL_MS: '500',
    SLIPWAY_HEARTBEAT_INTERVAL_MS: '300',
    // Short enough for recovery tests, long enough that a busy 2-core CI machine does not make
    // a live worker look dead.
    SLIPWAY_HEARTBEAT_STALE_MS: '4000',
    SLIPWAY_SHUTDOWN_TIMEOUT_MS: '5000',
    // As the test's api (test-api.ts): `url`s name serving ports unless the test runs an edge.
    SLIPWAY_EDGE_HTTP_PORT: api.config.edge.httpPort === null ? 'off' : String(api.config.edge.httpPort),
    SLIPWAY_APPS_DOMAIN: api.config.edge.appsDomain,
    ...overrides,
  };
}

/**
 * What runs a service: its compiled entry, as `npm start` runs it (`services/<name>/dist/start.js`,
 * built from the current sources by the test run's global setup), so a process starts without
 * compiling hundreds of modules on load (about 2 s of a core less per start than under tsx, and
 * the suite starts a few hundred). A service `npm start` does not compile runs from its source.
 */
export function entryArgs(name: ServiceName | 'cli' | 'registry'): string[] {
  const built = (START_ENTRIES as Record<string, { built: string } | undefined>)[name]?.built;
  if (built) return [path.join(ROOT, built)];
  // `node --import tsx`, not the tsx CLI: the CLI runs the program in a child process, so a
  // SIGKILL would hit only the wrapper and leave the real service running.
  return ['--import', 'tsx', path.join(ROOT, `services/${name}/src/main.ts`)];
}

/** Starts a service as its own process (as in production) and waits until it is up. */
export async function startService(
  name: ServiceName,
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, entryArgs(name), {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  const waiters = new Set<() => void>();
  const onData = (data: Buffer) => {
    chunks.push(data.toString());
    for (const w of waiters) w();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      for (const w of waiters) w();
      resolve({ code, signal });
    }),
  );
  const output = () => chunks.join('');
  const waitFor = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(output())) return done(resolve);
        if (child.exitCode !== null || child.signalCode !== null)
          done(() => reject(new Error(`${name} exited before printing ${pattern}:\n${output()}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`${name} did not print ${pattern} within ${timeoutMs} ms:\n${output()}`))),
        timeoutMs,
      );
      const done = (fn: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        fn();
      };
      waiters.add(check);
      check();
    });
  const service: ServiceProcess = {
    name,
    child,
    output,
    exited,
    waitFor,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  await waitFor(
    name === 'api' ? /api listening/ : name === 'edge' ? /edge listening/ : new RegExp(`${name} started`),
    readyTimeoutMs,
  );
  return service;
}

/** Polls `probe` until it returns a value that `done` accepts; fails with the last value seen. */
export async function eventually<T>(
  probe: () => Promise<T> | T,
  done: (value: T) => boolean,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await probe();
    if (done(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
