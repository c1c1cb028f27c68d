import { execFile } from 'node:child_process';
import { lstat, mkdir, realpath } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { SANDBOX_PATHS, sandboxCommand, type Cgroup, type Sandbox, type SandboxAttachment } from '@slipway/runtime';
import { BuildError, type BuildPaths } from './build-steps.js';

const run = promisify(execFile);

/** The process that runs a step: spawned as is, in `cwd` (a directory outside). */
export interface StepLaunch {
  command: string;
  args: string[];
  cwd: string;
  /** Sandboxed: the seccomp program the spawner hands over as descriptor 3 (handOverSeccomp). */
  seccomp?: Buffer;
}

/** Limits of every step of a build (docs/operations.md, Sandbox). */
export interface BuildLimits {
  memoryMb: number;
  cpu: number;
  pidsMax: number;
}

/**
 * Where and as whom the steps of one build run: sandboxed as the deployment's uid, or (the
 * documented opt-out) as the builder's own user. Paths given to it are outside paths under the
 * build directory; `inside` says where a step sees them.
 */
export interface BuildJail {
  /** The deployment's uid, or null when steps run as the builder's user. */
  readonly uid: number | null;
  /** HOME of every step, as the step sees it. */
  readonly home: string;
  /** The npm cache, as a step sees it. */
  readonly npmCache: string;
  inside(outside: string): string;
  /** `/bin/sh -c <command>` in `cwd` (outside), seeing `readOnly` directories at their own paths too. */
  launch(command: string, cwd: string, readOnly?: readonly string[]): StepLaunch;
  /** Before each step: what the builder wrote since the last one becomes the step's (the uid's). */
  prepare(): Promise<void>;
  /** Why a step that was killed died (`out of memory (limit N MB)`), or null. */
  killedBecause(): Promise<string | null>;
  /** After the last step. */
  release(): Promise<void>;
}

/** Where the npm cache appears in a sandboxed step. */
export const SANDBOX_NPM_CACHE = '/srv/npm-cache';

/** Steps run as the builder's own user (SLIPWAY_SANDBOX=off, or no sandbox outside production). */
export function unsandboxedJail(paths: Pick<BuildPaths, 'home' | 'npmCache'>): BuildJail {
  return {
    uid: null,
    home: paths.home,
    npmCache: paths.npmCache,
    inside: (outside) => outside,
    launch: (command, cwd) => ({ command: '/bin/sh', args: ['-c', command], cwd }),
    prepare: async () => undefined,
    killedBecause: async () => null,
    release: async () => undefined,
  };
}

/**
 * Steps run in the libs/runtime sandbox (bubblewrap's PID, IPC and UTS namespaces, a read-only
 * system, a private /tmp) as the deployment's uid, in the build's cgroup `b-<revision>-a<attempt>`
 * (memory, CPU, pids from SLIPWAY_BUILD_*), seeing only the build directory (at /srv/build) and
 * the deployment's npm cache, both handed to that uid. `--die-with-parent`: a step never outlives
 * the builder. Network: the build's own namespace (`b-<revision>-a<attempt>`, SandboxNetwork),
 * which reaches the public internet (the npm registry) and DNS, and nothing of this machine or
 * its private networks.
 */
export class SandboxedBuildJail implements BuildJail {
  readonly home: string;
  readonly npmCache = SANDBOX_NPM_CACHE;

  private constructor(
    private readonly sandbox: Sandbox,
    readonly uid: number,
    private readonly cgroup: Cgroup,
    private readonly net: SandboxAttachment,
    private readonly owner: string,
    private readonly limits: BuildLimits,
    private readonly paths: BuildPaths,
  ) {
    this.home = this.inside(paths.home);
  }

  static async open(
    sandbox: Sandbox,
    deploymentId: string,
    cgroupName: string,
    limits: BuildLimits,
    paths: BuildPaths,
  ): Promise<SandboxedBuildJail> {
    const uid = await sandbox.identities.uidOf(deploymentId);
    const cgroup = await sandbox.cgroups.create(cgroupName, {
      memoryMb: limits.memoryMb,
      cpu: limits.cpu,
      pids: limits.pidsMax,
    });
    const net = await sandbox.network.attach(cgroupName).catch(async (err) => {
      await cgroup.remove();
      throw err;
    });
    return new SandboxedBuildJail(sandbox, uid, cgroup, net, cgroupName, limits, paths);
  }

  inside(outside: string): string {
    const rel = path.relative(this.paths.work, outside);
    if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel))
      throw new Error(`${outside} is not in the build directory.`);
    return path.posix.join(SANDBOX_PATHS.build, rel.split(path.sep).join('/'));
  }

  launch(command: string, cwd: string, readOnly: readonly string[] = []): StepLaunch {
    const wrapped = sandboxCommand({
      uid: this.uid,
      gid: this.uid,
      readOnly: readOnly.map((dir) => ({ from: dir, to: dir })),
      writable: [
        { from: this.paths.work, to: SANDBOX_PATHS.build },
        { from: this.paths.npmCache, to: SANDBOX_NPM_CACHE },
      ],
      cwd: this.inside(cwd),
      command: '/bin/sh',
      args: ['-c', command],
      openFiles: this.sandbox.settings.openFiles,
      cgroupProcs: this.cgroup.procsFiles,
      dieWithParent: true,
      network: this.net,
    });
    // The spawn's own cwd: somewhere that exists outside; bubblewrap changes to the inside one.
    return { ...wrapped, cwd: this.paths.work };
  }

  async prepare(): Promise<void> {
    await mkdir(this.paths.npmCache, { recursive: true, mode: 0o700 });
    // -h: a symlink the source (or an earlier step) left is re-owned itself, never its target.
    await run('chown', ['-hR', `${this.uid}:${this.uid}`, '--', this.paths.work, this.paths.npmCache]);
  }

  async killedBecause(): Promise<string | null> {
    return (await this.cgroup.oomKills()) > 0 ? `out of memory (limit ${this.limits.memoryMb} MB)` : null;
  }

  async release(): Promise<void> {
    await this.cgroup.remove();
    await this.sandbox.network.detach(this.owner);
  }
}

/**
 * The builder's own dependencies directory (the outermost `node_modules` holding tsx), which the
 * graph check needs read-only in its sandbox to load TypeScript graphs as the agent server does.
 * Public code only: nothing of the control plane's configuration lives there.
 */
export async function builderModulesDir(): Promise<string> {
  const tsx = await realpath(createRequire(import.meta.url).resolve('tsx'));
  const parts = tsx.split(path.sep);
  const first = parts.indexOf('node_modules');
  if (first < 0) return path.dirname(tsx);
  return parts.slice(0, first + 1).join(path.sep) || path.sep;
}

/**
 * `dir` is a real directory at that very path (no symlink anywhere below `under`): checked
 * before the builder itself writes into or moves a tree a step could have changed. Steps have
 * all ended by then (their namespace dies with them), so nothing can swap it afterwards.
 */
export async function assertRealDirectory(dir: string, under: string): Promise<void> {
  const [realDir, realUnder] = await Promise.all([realpath(dir).catch(() => null), realpath(under)]);
  const info = await lstat(dir).catch(() => null);
  if (!realDir || !info?.isDirectory() || path.relative(realUnder, realDir) !== path.relative(under, dir)) {
    throw new BuildStepTampered(dir);
  }
}

/** A step replaced a directory the builder works in with something else (a symlink). */
export class BuildStepTampered extends BuildError {
  constructor(readonly dir: string) {
    super(
      `'${path.basename(dir)}' is no longer a real directory of the build ` +
        '(a link, or replaced by a build step); the build cannot continue.',
    );
  }
}
