import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import type { Artifact } from './artifact.js';
import { waitHealthy, type HealthOutcome } from './health.js';
import { isGroupLeader, isProcessAlive, stopProcessGroup } from './os-process.js';
import { pickFreePort } from './ports.js';
import { ProcessStore, type InstanceRecord, type Queryable } from './process-store.js';

export interface ProcessRuntimeOptions {
  /** Where instances and serving proxies listen (`SLIPWAY_RUNTIME_HOST`). */
  host: string;
  portMin: number;
  portMax: number;
  /** `<dataDir>/runtime/<deployment>/…` holds log files and each deployment's HOME. */
  dataDir: string;
}

export interface LaunchSpec {
  deploymentId: string;
  revisionId: string;
  /** Which instance of the revision (0-based). */
  index: number;
  artifact: Artifact;
  /** The app's environment (see `instanceEnvironment`); PORT, PATH and HOME are added here. */
  env: Record<string, string>;
  /** Restart of an existing row: same row, same log file, same port when it is still free. */
  existing?: InstanceRecord;
}

/** An instance started by this process. */
export interface LaunchedInstance {
  record: InstanceRecord;
  child: ChildProcess;
}

/** Thrown when the port range has no free port left. */
export class PortsExhaustedError extends Error {
  override name = 'PortsExhaustedError';
}

/**
 * An instance's environment, built from scratch. Precedence, lowest first: NODE_ENV=production,
 * the graph config's env, the revision's secrets, then what the platform manages (DATABASE_URI,
 * REDIS_URI, REDIS_PREFIX; the runtime adds PORT, PATH and HOME), which nothing overrides.
 */
export function instanceEnvironment(input: {
  /** The graph config's env (lowest precedence). */
  base?: Record<string, string>;
  secrets: ReadonlyArray<{ name: string; value: string }>;
  /** The control plane's DATABASE_URL: only its host, port and options are reused. */
  databaseUrl: string;
  databaseName: string | null;
  /** Password of the deployment's own role (named like its database). */
  databasePassword: string;
  redisUrl: string;
  deploymentId: string;
}): Record<string, string> {
  const env: Record<string, string> = { NODE_ENV: 'production', ...input.base };
  for (const s of input.secrets) env[s.name] = s.value;
  if (input.databaseName) {
    // The deployment's own role, never the control plane's credentials.
    const db = new URL(input.databaseUrl);
    db.username = encodeURIComponent(input.databaseName);
    db.password = encodeURIComponent(input.databasePassword);
    db.pathname = `/${input.databaseName}`;
    env.DATABASE_URI = db.toString();
  }
  // Redis is the control plane's; an app keeps to its own keys under REDIS_PREFIX (no DB index:
  // there are only 16 and many deployments).
  env.REDIS_URI = input.redisUrl;
  env.REDIS_PREFIX = `slipway-d-${input.deploymentId}`;
  return env;
}

/** The last `count` lines of a file (reads at most its last 64 KiB). */
export async function lastLines(file: string, count: number): Promise<string[]> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch {
    return [];
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split(/\r?\n/).filter((l) => l.trim().length);
    return lines.slice(-count);
  } finally {
    await handle.close();
  }
}

/**
 * The `process` runtime (DESIGN "Runtimes"): runs a built artifact as local server processes.
 *
 * Each instance is `artifact.json`'s start command in `<artifact>/app`, in a process group of its
 * own (`detached`) and unreferenced, with its output going straight to a log file through a file
 * descriptor — so instances keep running, and keep logging, when the deployer exits or is killed;
 * a new deployer re-adopts them from `runtime_processes`. The environment is built from scratch:
 * nothing of the deployer's own (its database URL, its secrets key) reaches an app.
 */
export class ProcessRuntime {
  readonly store: ProcessStore;
  /** Port picking and recording happen one at a time, so two launches never get the same port. */
  private portLock: Promise<unknown> = Promise.resolve();

  constructor(
    db: Queryable,
    private readonly options: ProcessRuntimeOptions,
  ) {
    this.store = new ProcessStore(db);
  }

  get host(): string {
    return this.options.host;
  }

  deploymentDir(deploymentId: string): string {
    return path.join(this.options.dataDir, 'runtime', deploymentId);
  }

  /** The deployment's stable serving port, allocated from the range on first use. */
  async servingPort(deploymentId: string): Promise<number> {
    const existing = await this.store.servingPort(deploymentId);
    if (existing) return existing;
    return this.withPortLock(async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        const port = await this.freePort();
        try {
          const claimed = await this.store.claimServingPort(deploymentId, port);
          if (claimed === null) throw new Error(`Deployment ${deploymentId} is gone.`);
          return claimed;
        } catch (err) {
          // Another deployment took the same port first (unique index): pick again.
          if ((err as { code?: string }).code !== '23505') throw err;
        }
      }
      throw new PortsExhaustedError('Could not reserve a serving port.');
    });
  }

  /**
   * Starts one instance: a free port (the row's old one first, on a restart), a `starting` row,
   * the process. Resolves once it is spawned; `waitHealthy` tells when it serves.
   */
  async launch(spec: LaunchSpec): Promise<LaunchedInstance> {
    const dir = this.deploymentDir(spec.deploymentId);
    const home = path.join(dir, 'home');
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const logPath = spec.existing?.logPath ?? path.join(dir, `${spec.revisionId}-${spec.index}.log`);

    const record = await this.withPortLock(async () => {
      const taken = await this.store.takenPorts();
      if (spec.existing) taken.delete(spec.existing.port);
      const port = await this.freePort(taken, spec.existing?.port);
      if (spec.existing) {
        if (!(await this.store.update(spec.existing.id, 'starting', { pid: null, port }))) throw new Error(`Instance ${spec.existing.id} is gone.`);
        return { ...spec.existing, port, pid: null, status: 'starting' as const };
      }
      return this.store.insert({ deploymentId: spec.deploymentId, revisionId: spec.revisionId, port, logPath });
    });

    // Opened here and handed over as the child's stdout/stderr: the kernel keeps writing to it
    // after we close our copy, whatever happens to this process.
    const fd = openSync(logPath, 'a', 0o600);
    let child: ChildProcess;
    try {
      writeSync(fd, `--- slipway: starting instance ${spec.index} of revision ${spec.revisionId} on port ${record.port} (${new Date().toISOString()}) ---\n`);
      child = spawn(spec.artifact.manifest.start.command, spec.artifact.manifest.start.args, {
        cwd: spec.artifact.cwd,
        detached: true,
        stdio: ['ignore', fd, fd],
        env: {
          ...spec.env,
          PORT: String(record.port),
          PATH: [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
          HOME: home,
          // npm would otherwise look for updates and funding on every start.
          NPM_CONFIG_UPDATE_NOTIFIER: 'false',
          NPM_CONFIG_FUND: 'false',
        },
      });
    } finally {
      closeSync(fd);
    }
    // A spawn failure (command not found) surfaces as an 'error' event and no pid.
    const spawned = await new Promise<Error | null>((resolve) => {
      child.once('spawn', () => resolve(null));
      child.once('error', (err) => resolve(err));
    });
    child.unref();
    if (spawned || !child.pid) {
      await this.store.update(record.id, 'exited');
      throw new Error(`Could not start '${spec.artifact.manifest.start.command}': ${spawned?.message ?? 'no pid'}`);
    }
    record.pid = child.pid;
    await this.store.update(record.id, 'starting', { pid: child.pid });
    return { record, child };
  }

  /** Waits for the instance's health probe; see `waitHealthy`. */
  waitHealthy(record: InstanceRecord, deadline: number, signal?: AbortSignal): Promise<HealthOutcome> {
    return waitHealthy({ host: this.options.host, port: record.port, deadline, signal, alive: () => this.isAlive(record) });
  }

  /** The instance's process (its group leader) runs. */
  isAlive(record: Pick<InstanceRecord, 'pid'>): boolean {
    return isProcessAlive(record.pid);
  }

  /**
   * Stops an instance: SIGTERM to its process group, SIGKILL after `graceMs`; the row ends
   * `exited`. A recorded pid that no longer leads its own group is not ours any more (recycled)
   * and is left alone.
   */
  async stop(record: InstanceRecord, graceMs = 10_000): Promise<void> {
    await this.kill(record, graceMs);
    await this.store.update(record.id, 'exited');
    record.status = 'exited';
  }

  /** Stops the instance's process group without touching its row (a restart reuses the row). */
  async kill(record: Pick<InstanceRecord, 'pid'>, graceMs: number): Promise<void> {
    // A dead leader (npm) may leave its group behind (the server, still holding the port): the
    // group is what gets stopped. Only a live pid that leads no group is someone else's.
    const stranger = !!record.pid && isProcessAlive(record.pid) && !isGroupLeader(record.pid);
    if (record.pid && !stranger) await stopProcessGroup(record.pid, graceMs);
  }

  private async freePort(taken?: Set<number>, preferred?: number | null): Promise<number> {
    const port = await pickFreePort(this.options, taken ?? (await this.store.takenPorts()), preferred);
    if (port === null) throw new PortsExhaustedError(`No free port left in ${this.options.portMin}-${this.options.portMax}.`);
    return port;
  }

  private withPortLock<T>(work: () => Promise<T>): Promise<T> {
    const run = this.portLock.then(work, work);
    this.portLock = run.catch(() => undefined);
    return run;
  }
}
