import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import type { SandboxSettings as ConfiguredSandbox } from '@slipway/config';
import type { DeploymentRuntimeWrites, Queryable } from '../instance-types.js';
import { CgroupWriter, detectCgroups, type Cgroup, type CgroupLimits } from './cgroups.js';
import { SandboxIdentities } from './identities.js';
import { removeLegacyUidRules } from './net/egress-rules.js';
import { SandboxNetwork, storeAddresses } from './net/sandbox-network.js';
import { handOverSeccomp, sandboxSeccompBpf, SECCOMP_FD } from './seccomp.js';

const run = promisify(execFile);

/** The sandbox's part of the configuration (SLIPWAY_SANDBOX_*; the build limits are the builder's). */
export type SandboxSettings = Omit<ConfiguredSandbox, 'build'>;

/** Why the sandbox cannot be set up on this machine. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

/**
 * The pieces that confine user code (docs/operations.md, Sandbox): a uid per deployment, cgroups, and
 * a network namespace per sandbox with the host's egress rules. Built by `setUpSandbox`, which
 * checks each piece works.
 */
export class Sandbox {
  readonly identities: SandboxIdentities;

  constructor(
    readonly settings: SandboxSettings,
    db: Queryable,
    deployments: DeploymentRuntimeWrites,
    readonly cgroups: CgroupWriter,
    readonly network: SandboxNetwork,
  ) {
    this.identities = new SandboxIdentities(db, deployments, settings.uidMin, settings.uidMax);
  }

  /** A fresh cgroup with the limits (memory defaulting to the configured one). */
  limit(name: string, limits: { memoryMb?: number; cpu?: number }): Promise<Cgroup> {
    return this.cgroups.create(name, this.limitsOf(limits));
  }

  limitsOf(limits: { memoryMb?: number; cpu?: number }): CgroupLimits {
    return { memoryMb: limits.memoryMb ?? this.settings.defaultMemoryMb, cpu: limits.cpu, pids: this.settings.pidsMax };
  }
}

/**
 * Checks root, the tools, writable cgroups and nftables, then prepares the sandboxes' network
 * (forwarding, the services address, the rules; `stores`: the control plane's DATABASE_URL and
 * REDIS_URL, whose addresses no sandbox may reach; `deployments`: where each deployment's uid is
 * recorded, libs/db's `DeploymentRepository`).
 */
export async function setUpSandbox(
  settings: SandboxSettings,
  db: Queryable,
  deployments: DeploymentRuntimeWrites,
  stores: string[] = [],
): Promise<Sandbox> {
  if (process.getuid?.() !== 0)
    throw new SandboxUnavailableError(
      'the sandbox needs root (it switches to per-deployment uids and writes cgroups).',
    );
  for (const [tool, args] of [
    ['bwrap', ['--version']],
    ['setpriv', ['--version']],
    ['prlimit', ['--version']],
    ['nft', ['--version']],
    ['nsenter', ['--version']],
    ['ip', ['-V']],
  ] as const) {
    await run(tool, [...args]).catch(() => {
      throw new SandboxUnavailableError(
        `'${tool}' is not installed (Debian: apt-get install bubblewrap util-linux nftables iproute2).`,
      );
    });
  }
  await checkSeccomp().catch((err) => {
    throw new SandboxUnavailableError(
      `bubblewrap could not install the seccomp filter: ${err instanceof Error ? err.message : String(err)}`,
    );
  });
  const layout = await detectCgroups();
  if (!layout)
    throw new SandboxUnavailableError(
      'no writable cgroup controllers (v2, or v1 memory/cpu/pids) under /sys/fs/cgroup.',
    );
  const network = new SandboxNetwork(
    db,
    settings.subnet,
    { allowCidrs: settings.allowCidrs, storeAddresses: await storeAddresses(stores) },
    settings.dns,
  );
  await network.apply().catch((err) => {
    throw new SandboxUnavailableError(
      `the sandboxes' network could not be set up (needs CAP_NET_ADMIN and nftables): ${err instanceof Error ? err.message : String(err)}`,
    );
  });
  await removeLegacyUidRules(settings.uidMin, settings.uidMax);
  return new Sandbox(settings, db, deployments, new CgroupWriter(layout), network);
}

/**
 * bubblewrap loads the sandbox's seccomp program and runs a command under it (an old bwrap or kernel fails here, not at
 * the first build).
 */
function checkSeccomp(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', ['--ro-bind', '/', '/', '--seccomp', String(SECCOMP_FD), '--', 'true'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    handOverSeccomp(child, sandboxSeccompBpf());
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(stderr.trim() || `exit ${code}`))));
  });
}

/**
 * The start-up policy (item "production refuses to run unsandboxed"): the sandbox when it can be
 * set up; otherwise production refuses to start unless `SLIPWAY_SANDBOX=off`, and everything
 * else runs unsandboxed with a loud warning. `off` warns at every start too.
 */
export async function sandboxForStart(
  settings: SandboxSettings,
  db: Queryable,
  deployments: DeploymentRuntimeWrites,
  { production, warn, stores = [] }: { production: boolean; warn: (message: string) => void; stores?: string[] },
): Promise<Sandbox | null> {
  const unsafe =
    "USER CODE RUNS UNSANDBOXED: builds and apps run as this process's user and can read its environment, files and credentials.";
  if (settings.mode === 'off') {
    warn(`SLIPWAY_SANDBOX=off. ${unsafe}`);
    return null;
  }
  try {
    return await setUpSandbox(settings, db, deployments, stores);
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    if (production) {
      throw new Error(
        `Refusing to start in production without the sandbox: ${err.message} Fix it, ` +
          `or set SLIPWAY_SANDBOX=off to run unsandboxed (unsafe).`,
      );
    }
    warn(`The sandbox is unavailable: ${err.message} ${unsafe} (Production refuses to start like this.)`);
    return null;
  }
}
