import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { chownSync, closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { ContainerImage, ContainerInstances } from '../container/container-instances.js';
import { ImageError } from '../container/image-config.js';
import { runcError } from '../container/runc.js';
import { containerStartFailure } from '../container/start-failure.js';
import { SANDBOX_PATHS, sandboxCommand, sandboxEnvironment } from '../sandbox/command.js';
import type { CgroupUsage } from '../sandbox/cgroups.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { handOverSeccomp } from '../sandbox/seccomp.js';
import { ArtifactError, type Artifact } from './artifact.js';
import { waitHealthy, type HealthOutcome } from './health.js';
import { linesSinceLastStart, START_HEADER } from './instance-log.js';
import { isGroupLeader, isProcessAlive, stopProcessGroup } from './os-process.js';
import { pickFreePort } from './ports.js';
import {
  ProcessStore,
  type DeploymentRuntimeWrites,
  type InstanceRecord,
  type InstanceRole,
  type Queryable,
} from './process-store.js';

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

export interface LaunchSpec {
  deploymentId: string;
  revisionId: string;
  /** An API instance (the default) or a queue worker; see InstanceRole. */
  role?: InstanceRole;
  /** Which instance of the revision and role (0-based). */
  index: number;
  /** What a process runs; absent when `image` is given. */
  artifact?: Artifact;
  /** The app's environment (see `instanceEnvironment`); PORT, PATH and HOME are added here. */
  env: Record<string, string>;
  /** Restart of an existing row: same row, same log file, same port when it is still free. */
  existing?: InstanceRecord;
  /** Per-instance limits (sandbox only). */
  limits?: { memoryMb?: number; cpu?: number };
  /** Ports of the data-access fronts (on the sandbox network's services address) the instance may connect to (sandbox only). */
  frontPorts?: number[];
  /** Run this image in a container instead of the artifact's start command. */
  image?: ContainerImage;
  /** A line for the revision's deploy log (a container start tried again); absent: not said. */
  log?: (line: string, level?: 'info' | 'warn' | 'error') => void;
}

/** An instance started by this process. */
export interface LaunchedInstance {
  record: InstanceRecord;
  /** The spawned process (null for a container: runc started it). */
  child: ChildProcess | null;
}

/** An instance's network namespace holder (SandboxNetwork), like its cgroup's name. */
const networkOwner = (record: Pick<InstanceRecord, 'id'>) => `i-${record.id}`;

/** How logs name an instance: `instance 0`, `queue worker 1`. */
export const instanceLabel = (record: Pick<InstanceRecord, 'role' | 'index'>) =>
  `${record.role === 'queue' ? 'queue worker' : 'instance'} ${record.index}`;

/** How often `runc run` is tried for one instance start before the failure counts as deterministic. */
export const CONTAINER_START_ATTEMPTS = 3;
/** The pause before the second try (twice that before the third). */
const CONTAINER_START_PAUSE_MS = 1_000;

/**
 * A container that `runc run` could not start, the same way each of CONTAINER_START_ATTEMPTS
 * times, for a reason other than its command (launchContainer): the rollout fails with it.
 */
export class ContainerStartError extends ArtifactError {
  override name = 'ContainerStartError';
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

    if (spec.image) return this.launchContainer(spec, spec.image, record, dir);
    const command = await this.command(spec, record, home);
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
   * A container instead of a process (ContainerInstances); its init's pid is the row's pid.
   *
   * A start that fails is classified: a command that cannot be executed is the image's fault and
   * fails at once (ImageError). Any other failure of `runc run` (a mount the image's root
   * filesystem cannot take, a cgroup or namespace the kernel refused) may be the machine's for a
   * moment, so it is tried CONTAINER_START_ATTEMPTS times in all, a short pause between; failing
   * that often, it is taken as deterministic and fails the rollout with runc's words
   * (ContainerStartError), rather than throwing to the reconciler, whose retries would only
   * repeat it and end with a message that no longer says why.
   */
  private async launchContainer(
    spec: LaunchSpec,
    image: ContainerImage,
    record: InstanceRecord,
    dir: string,
  ): Promise<LaunchedInstance> {
    const containers = this.options.containers;
    if (!containers)
      throw new Error('Images need the embedded container runtime, which needs the sandbox (root, runc).');
    for (let attempt = 1; ; attempt++) {
      try {
        record.pid = await containers.launch(
          record,
          {
            deploymentId: spec.deploymentId,
            image,
            env: spec.env,
            limits: spec.limits ?? {},
            frontPorts: spec.frontPorts ?? [],
            deploymentDir: dir,
            logPath: record.logPath,
            header:
              `${START_HEADER} ${instanceLabel(record)} of revision ${spec.revisionId} ` +
              `(image ${image.digest}) on port ${record.port} (${new Date().toISOString()}) ---\n`,
          },
          async (address) => {
            record.address = address;
            await this.store.update(record.id, 'starting', { address });
          },
        );
        break;
      } catch (err) {
        // This attempt's lines: those after its own header (the file keeps the earlier ones).
        const lines = await linesSinceLastStart(record.logPath);
        // Its namespace, cgroup and runc state go with it; the row ends `exited`.
        await this.stop(record, 0).catch(() => this.store.update(record.id, 'exited'));
        // A command that cannot be executed never will be: the image's fault, not worth a retry.
        const cannot = containerStartFailure(lines, image.config.command);
        if (cannot) throw new ImageError(cannot);
        // runc's own error lines (`time="…" level=error msg="…"`), else what was printed last.
        const said =
          runcError(lines.filter((l) => /\blevel=(error|fatal)\b/.test(l)).join('\n')) || lines.slice(-3).join(' ');
        if (attempt >= CONTAINER_START_ATTEMPTS) {
          throw new ContainerStartError(
            `The container could not be started (${attempt} attempts, failing each time): ${said || (err as Error).message}`,
          );
        }
        spec.log?.(
          `The container of ${instanceLabel(record)} did not start ` +
            `(attempt ${attempt} of ${CONTAINER_START_ATTEMPTS}): ${said || (err as Error).message}; ` +
            `trying again.`,
          'warn',
        );
        await new Promise((r) => setTimeout(r, CONTAINER_START_PAUSE_MS * attempt));
        if (!(await this.store.update(record.id, 'starting'))) throw new Error(`Instance ${record.id} is gone.`);
        record.status = 'starting';
      }
    }
    await this.store.update(record.id, 'starting', { pid: record.pid });
    return { record, child: null };
  }

  /**
   * What runs: the start command in the artifact, sandboxed (the deployment's uid, its cgroup
   * `i-<instance id>`, its network namespace `i-<instance id>` with its fronts opened to it)
   * unless the sandbox is off.
   */
  private async command(
    spec: LaunchSpec,
    record: InstanceRecord,
    home: string,
  ): Promise<{ command: string; args: string[]; cwd: string; env: Record<string, string>; seccomp?: Buffer }> {
    const artifact = spec.artifact;
    if (!artifact) throw new Error('An instance needs an artifact or an image to run.');
    const { start } = artifact.manifest;
    const runtimeEnv = {
      PORT: String(record.port),
      // npm would otherwise look for updates and funding on every start.
      NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      NPM_CONFIG_FUND: 'false',
    };
    const pathDirs = [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'];
    const sandbox = this.options.sandbox;
    if (!sandbox)
      return {
        command: start.command,
        args: start.args,
        cwd: artifact.cwd,
        env: sandboxEnvironment(spec.env, { home, path: pathDirs, extra: runtimeEnv }),
      };
    const uid = await sandbox.identities.uidOf(spec.deploymentId);
    chownSync(home, uid, uid);
    const cgroup = await sandbox.limit(`i-${record.id}`, spec.limits ?? {});
    const net = await sandbox.network.attach(networkOwner(record));
    await sandbox.network.allowFronts(net.address, spec.frontPorts ?? []);
    record.address = net.address;
    await this.store.update(record.id, 'starting', { address: net.address });
    const wrapped = sandboxCommand({
      uid,
      gid: uid,
      readOnly: [{ from: artifact.dir, to: SANDBOX_PATHS.artifact }],
      writable: [{ from: home, to: SANDBOX_PATHS.home }],
      cwd: path.join(SANDBOX_PATHS.artifact, path.relative(artifact.dir, artifact.cwd)),
      command: start.command,
      args: start.args,
      openFiles: sandbox.settings.openFiles,
      cgroupProcs: cgroup.procsFiles,
      dieWithParent: false,
      network: net,
    });
    const env = sandboxEnvironment(spec.env, { home: SANDBOX_PATHS.home, path: pathDirs, extra: runtimeEnv });
    // The deployment's runtime dir: outside, the sandbox's own processes show where they belong.
    return { ...wrapped, cwd: this.deploymentDir(spec.deploymentId), env };
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
