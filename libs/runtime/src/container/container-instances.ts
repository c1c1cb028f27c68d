import { closeSync, existsSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { InstanceRecord } from '../instance-types.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { DEFAULT_PATH, type ImageConfig } from './image-config.js';
import { ociConfig } from './oci-spec.js';
import { Runc } from './runc.js';
import { ociSeccomp } from '../sandbox/seccomp.js';

/** The image an instance runs (ImageCache): its unpacked root and configuration. */
export interface ContainerImage {
  digest: string;
  rootfs: string;
  config: ImageConfig;
}

/** What a container launch needs beyond the instance row. */
export interface ContainerLaunch {
  deploymentId: string;
  image: ContainerImage;
  /** The app's environment (image Env, secrets, data access); PORT and a default PATH/HOME are added. */
  env: Record<string, string>;
  limits: { memoryMb?: number; cpu?: number };
  frontPorts: number[];
  /** `<runtime>/<deployment>`: the bundle directory goes below it. */
  deploymentDir: string;
  logPath: string;
  header: string;
}

/** The catatonit binary Debian installs; shown as the init of images that bring none. */
export const CATATONIT = '/usr/bin/catatonit';

/** A container's runc id and cgroup/network owner name: the instance's, like a sandboxed process's. */
export const containerId = (record: Pick<InstanceRecord, 'id'>) => `i-${record.id}`;

/**
 * The embedded container runtime's instances (docs/operations.md, The container runtime): each
 * instance row is one runc container `i-<instance id>` under `runcRoot`, in the deployment's
 * sandbox (uid, cgroup, network namespace). Containers outlive the deployer; a new one finds them
 * by their state under `runcRoot`.
 */
export class ContainerInstances {
  readonly runc: Runc;

  constructor(
    private readonly sandbox: Sandbox,
    runcRoot: string,
    private readonly init: string = CATATONIT,
  ) {
    mkdirSync(runcRoot, { recursive: true, mode: 0o700 });
    this.runc = new Runc(runcRoot);
  }

  /** The uid every container of the deployment runs as (its sandbox uid), whatever its image's USER says. */
  uidOf(deploymentId: string): Promise<number> {
    return this.sandbox.identities.uidOf(deploymentId);
  }

  /** True when the row is a container (its state exists under our root). */
  owns(record: Pick<InstanceRecord, 'id'>): boolean {
    return this.runc.exists(containerId(record));
  }

  isRunning(record: Pick<InstanceRecord, 'id'>): boolean {
    return this.runc.isRunning(containerId(record));
  }

  /** Starts the instance's container (replacing a stopped one of the same row); returns its init's host pid. */
  async launch(
    record: InstanceRecord,
    spec: ContainerLaunch,
    onAddress: (address: string) => Promise<void>,
  ): Promise<number> {
    const id = containerId(record);
    await this.runc.stop(id, 1_000);
    await this.runc.delete(id);
    const uid = await this.uidOf(spec.deploymentId);
    const net = await this.sandbox.network.attach(id);
    await this.sandbox.network.allowFronts(net.address, spec.frontPorts);
    await onAddress(net.address);
    const bundle = path.join(spec.deploymentDir, 'containers', record.id);
    mkdirSync(bundle, { recursive: true, mode: 0o700 });
    const { config } = spec.image;
    const env = { PATH: DEFAULT_PATH, HOME: '/tmp', ...spec.env, PORT: String(record.port) };
    writeFileSync(
      path.join(bundle, 'config.json'),
      JSON.stringify(
        ociConfig({
          rootfs: spec.image.rootfs,
          command: config.command,
          env,
          cwd: config.workingDir,
          uid,
          gid: uid,
          init: config.hasInit || !existsSync(this.init) ? null : this.init,
          cgroupsPath: `/slipway/${id}`,
          network: net,
          limits: this.sandbox.limitsOf(spec.limits),
          openFiles: this.sandbox.settings.openFiles,
          // The same syscall policy as every sandboxed process (sandbox/seccomp.ts).
          seccomp: ociSeccomp(),
        }),
      ),
      { mode: 0o600 },
    );
    const pidFile = path.join(bundle, 'init.pid');
    await rm(pidFile, { force: true });
    const fd = openSync(spec.logPath, 'a', 0o600);
    try {
      writeSync(fd, spec.header);
      await this.runc.run(id, bundle, pidFile, fd);
    } finally {
      closeSync(fd);
    }
    return Number((await readFile(pidFile, 'utf8')).trim());
  }

  /** Digests whose unpacked root some container under our root (running or stopped) still uses. */
  async digestsInUse(imagesDir: string): Promise<Set<string>> {
    const used = new Set<string>();
    for (const { id } of await this.runc.list()) {
      const state = await readFile(path.join(this.runc.root, id, 'state.json'), 'utf8').catch(() => '{}');
      const rootfs = (JSON.parse(state) as { config?: { rootfs?: string } }).config?.rootfs ?? '';
      const rel = path.relative(imagesDir, rootfs).split(path.sep)[0] ?? '';
      if (/^[0-9a-f]{64}$/.test(rel)) used.add(`sha256:${rel}`);
    }
    return used;
  }

  /** SIGTERM, SIGKILL after `graceMs`; the container stays (stopped) so its cgroup can still be read. */
  kill(record: Pick<InstanceRecord, 'id'>, graceMs: number): Promise<void> {
    return this.runc.stop(containerId(record), graceMs);
  }

  /** Removes the stopped container and its bundle. */
  async remove(record: Pick<InstanceRecord, 'id'>, deploymentDir: string): Promise<void> {
    await this.runc.delete(containerId(record));
    await rm(path.join(deploymentDir, 'containers', record.id), { recursive: true, force: true });
  }
}
