import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { ContainerInstances } from '../container/container-instances.js';
import type { CgroupUsage } from '../sandbox/cgroups.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { handOverSeccomp } from '../sandbox/seccomp.js';
import { launchContainer } from './container-launch.js';
import { waitHealthy, type HealthOutcome } from './health.js';
import { instanceCommand } from './instance-command.js';
import { instanceLabel, networkOwner, type LaunchedInstance, type LaunchSpec } from './instance-launch.js';
import { START_HEADER } from './instance-log.js';
import { isGroupLeader, isProcessAlive, stopProcessGroup } from './os-process.js';
import { pickFreePort } from './ports.js';
import { ProcessStore, type DeploymentRuntimeWrites, type InstanceRecord, type Queryable } from './process-store.js';

export interface ProcessRuntimeOptions {
  /** Where instances and serving proxies listen (`SLIPWAY_RUNTIME_HOST`). */
  host: string;
  portMin: number;
  portMax: number;
  /** `<dataDir>/runtime/<deployment>/…` holds log files and each deployment's HOME. */
  dataDir: string;
  /** Null: instances run unsandboxed, as this process's user (the documented opt-out). */
  sandbox?: Sandbox | null;
  /** The embedded container runtime (needs the sandbox); null: images cannot run here. */
  containers?: ContainerInstances | null;
  /** Where the serving port is recorded (libs/db's `DeploymentRepository`). */
  deployments: DeploymentRuntimeWrites;
}

/** Thrown when the port range has no free port left. */
export class PortsExhaustedError extends Error {
  override name = 'PortsExhaustedError';
}

/**
 * The `process` runtime (docs/architecture.md, Runtimes): runs a built artifact as local server processes.
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
    this.store = new ProcessStore(db, options.deployments);
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
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const role = spec.existing?.role ?? spec.role ?? 'api';
    const logPath =
      spec.existing?.logPath ??
      path.join(dir, `${spec.revisionId}-${role === 'queue' ? 'queue-' : ''}${spec.index}.log`);

    const record = await this.withPortLock(async () => {
      const taken = await this.store.takenPorts();
      if (spec.existing) taken.delete(spec.existing.port);
      const port = await this.freePort(taken, spec.existing?.port);
      if (spec.existing) {
        if (!(await this.store.update(spec.existing.id, 'starting', { pid: null, port })))
          throw new Error(`Instance ${spec.existing.id} is gone.`);
        return { ...spec.existing, port, pid: null, status: 'starting' as const };
      }
      return this.store.insert({ deploymentId: spec.deploymentId, revisionId: spec.revisionId, role, port, logPath });
    });

    if (spec.image)
      return launchContainer(spec, spec.image, record, dir, {
        containers: this.options.containers,
        store: this.store,
        stop: (r) => this.stop(r, 0),
      });
    const command = await instanceCommand(spec, record, home, {
      sandbox: this.options.sandbox,
      store: this.store,
      deploymentDir: dir,
    });
    // Opened here and handed over as the child's stdout/stderr: the kernel keeps writing to it
    // after we close our copy, whatever happens to this process.
    const fd = openSync(logPath, 'a', 0o600);
    let child: ChildProcess;
    try {
      writeSync(
        fd,
        `${START_HEADER} ${instanceLabel(record)} of revision ${spec.revisionId} on port ${record.port} ` +
          `(${new Date().toISOString()}) ---\n`,
      );
      // Descriptor 3: the seccomp program, for bubblewrap (sandboxed only).
      const stdio: StdioOptions = ['ignore', fd, fd, ...(command.seccomp ? ['pipe' as const] : [])];
      child = spawn(command.command, command.args, { cwd: command.cwd, detached: true, stdio, env: command.env });
      if (command.seccomp) handOverSeccomp(child, command.seccomp);
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
      throw new Error(`Could not start '${spec.artifact?.manifest.start.command}': ${spawned?.message ?? 'no pid'}`);
    }
    record.pid = child.pid;
    await this.store.update(record.id, 'starting', { pid: child.pid });
    return { record, child };
  }

  /**
   * Why an instance that exited did: `out of memory (limit N MB)` when the kernel's OOM killer
   * hit its cgroup, else null (unknown, or unsandboxed).
   */
  async exitCause(record: Pick<InstanceRecord, 'id'>, limits: { memoryMb?: number }): Promise<string | null> {
    const sandbox = this.options.sandbox;
    if (!sandbox) return null;
    const kills = await sandbox.cgroups.handle(`i-${record.id}`).oomKills();
    return kills > 0 ? `out of memory (limit ${sandbox.limitsOf(limits).memoryMb} MB)` : null;
  }

  /**
   * The instance's memory in use and CPU time used, from its cgroup (null unsandboxed: an
   * unconfined process group has no one place that adds up its processes).
   */
  async usage(record: Pick<InstanceRecord, 'id'>): Promise<CgroupUsage | null> {
    const sandbox = this.options.sandbox;
    return sandbox ? sandbox.cgroups.handle(`i-${record.id}`).usage() : null;
  }

  /** Where the instance is reached: its sandbox's address, or (unsandboxed) the runtime host. */
  instanceHost(record: Pick<InstanceRecord, 'address'>): string {
    return record.address ?? this.options.host;
  }

  /** A running instance found after a restart: its namespace's DNS relay is served by this process again. */
  async adoptNetwork(record: InstanceRecord): Promise<void> {
    if (record.address && this.options.sandbox) await this.options.sandbox.network.attach(networkOwner(record));
  }

  /** Stops answering DNS for this process's sandboxes (a lost runtime lock): the next owner's adoption serves them. */
  async releaseNetworks(): Promise<void> {
    await this.options.sandbox?.network.close();
  }

  /** Waits for the instance's health probe; see `waitHealthy`. */
  waitHealthy(record: InstanceRecord, deadline: number, signal?: AbortSignal): Promise<HealthOutcome> {
    return waitHealthy({
      host: this.instanceHost(record),
      port: record.port,
      deadline,
      signal,
      alive: () => this.isAlive(record),
    });
  }

  /** The instance's process (its group leader), or its container's init, runs. */
  isAlive(record: Pick<InstanceRecord, 'id' | 'pid'>): boolean {
    const containers = this.options.containers;
    if (containers?.owns(record)) return containers.isRunning(record);
    return isProcessAlive(record.pid);
  }

  /**
   * Stops an instance: SIGTERM to its process group, SIGKILL after `graceMs`; the row ends
   * `exited`. A recorded pid that no longer leads its own group is not ours any more (recycled)
   * and is left alone.
   */
  async stop(record: InstanceRecord, graceMs = 10_000): Promise<void> {
    await this.kill(record, graceMs);
    await this.options.containers?.remove(record, this.deploymentDir(record.deploymentId));
    await this.store.update(record.id, 'exited');
    record.status = 'exited';
    const sandbox = this.options.sandbox;
    if (sandbox) {
      await sandbox.cgroups.handle(`i-${record.id}`).remove();
      await sandbox.network.detach(networkOwner(record));
    }
  }

  /**
   * At start (the runtime's owner): namespaces of instances that are no longer live (a stop
   * that did not finish) are removed.
   */
  async reapNetworks(): Promise<string[]> {
    const sandbox = this.options.sandbox;
    if (!sandbox) return [];
    const live = new Set((await this.store.live()).map((r) => networkOwner(r)));
    return sandbox.network.reap('i-', async (owner) => live.has(owner));
  }

  /** Stops the instance's process group without touching its row (a restart reuses the row). */
  async kill(record: Pick<InstanceRecord, 'id' | 'pid'>, graceMs: number): Promise<void> {
    const containers = this.options.containers;
    if (containers?.owns(record)) return containers.kill(record, graceMs);
    // A dead leader (npm) may leave its group behind (the server, still holding the port): the
    // group is what gets stopped. Only a live pid that leads no group is someone else's.
    const stranger = !!record.pid && isProcessAlive(record.pid) && !isGroupLeader(record.pid);
    if (record.pid && !stranger) await stopProcessGroup(record.pid, graceMs);
  }

  private async freePort(taken?: Set<number>, preferred?: number | null): Promise<number> {
    const port = await pickFreePort(this.options, taken ?? (await this.store.takenPorts()), preferred);
    if (port === null)
      throw new PortsExhaustedError(`No free port left in ${this.options.portMin}-${this.options.portMax}.`);
    return port;
  }

  private withPortLock<T>(work: () => Promise<T>): Promise<T> {
    const run = this.portLock.then(work, work);
    this.portLock = run.catch(() => undefined);
    return run;
  }
}
