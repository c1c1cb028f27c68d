import type { OciSeccomp } from '../sandbox/seccomp.js';
import type { CgroupLimits } from '../sandbox/cgroups.js';

/** Everything one container's `config.json` is made of. */
export interface ContainerSpec {
  /** The unpacked image, shared by containers of the same digest: mounted read-only. */
  rootfs: string;
  /** argv (the image's Entrypoint + Cmd). */
  command: string[];
  env: Record<string, string>;
  cwd: string;
  uid: number;
  gid: number;
  /** An init binary (catatonit) shown at INIT_PATH and run as PID 1 in front of `command`; null: the image brings one. */
  init: string | null;
  /** Absolute, so runc does not nest it under the deployer's own cgroup. */
  cgroupsPath: string;
  /** The sandbox's network namespace (SandboxNetwork.attach). */
  network: { nsPath: string; resolvConf: string };
  limits: CgroupLimits;
  openFiles: number;
  /** The OCI seccomp section: the sandbox's syscall policy (sandbox/seccomp.ts). */
  seccomp: OciSeccomp;
}

/** Where the init appears inside: /dev is the container's own tmpfs, so the image stays untouched. */
export const INIT_PATH = '/dev/init';
/** The hard open-files ceiling root may set on these machines (no CAP_SYS_RESOURCE). */
export const MAX_OPEN_FILES = 20_000;
const CPU_PERIOD_US = 100_000;

/**
 * runc's `config.json` for one instance: not a terminal; the deployment's uid/gid with no
 * supplementary groups, no capabilities and no_new_privs; read-only root with private /proc,
 * /dev, /dev/shm and a writable /tmp; new PID, IPC, UTS and mount namespaces and the sandbox's
 * network namespace; memory, CPU and pids limits on an absolute cgroup; rlimits under the host's.
 */
export function ociConfig(spec: ContainerSpec): Record<string, unknown> {
  const openFiles = Math.min(spec.openFiles, MAX_OPEN_FILES);
  const args = spec.init ? [INIT_PATH, '--', ...spec.command] : spec.command;
  const noCaps = { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] };
  const memory = Math.max(1, Math.round(spec.limits.memoryMb)) * 1024 * 1024;
  const quota =
    spec.limits.cpu && spec.limits.cpu > 0 ? Math.max(1_000, Math.round(spec.limits.cpu * CPU_PERIOD_US)) : undefined;
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: spec.uid, gid: spec.gid, additionalGids: [] },
      args,
      env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      cwd: spec.cwd,
      capabilities: noCaps,
      rlimits: [{ type: 'RLIMIT_NOFILE', hard: openFiles, soft: openFiles }],
      noNewPrivileges: true,
    },
    root: { path: spec.rootfs, readonly: true },
    hostname: 'sandbox',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      {
        destination: '/dev',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'],
      },
      {
        destination: '/dev/pts',
        type: 'devpts',
        source: 'devpts',
        options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'],
      },
      {
        destination: '/dev/shm',
        type: 'tmpfs',
        source: 'shm',
        options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'],
      },
      { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      {
        destination: '/tmp',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'nodev', 'mode=1777', 'size=262144k'],
      },
      {
        destination: '/etc/resolv.conf',
        type: 'bind',
        source: spec.network.resolvConf,
        options: ['rbind', 'ro', 'nosuid', 'nodev', 'noexec'],
      },
      ...(spec.init
        ? [{ destination: INIT_PATH, type: 'bind', source: spec.init, options: ['bind', 'ro', 'nosuid', 'nodev'] }]
        : []),
    ],
    linux: {
      cgroupsPath: spec.cgroupsPath,
      resources: {
        devices: [{ allow: false, access: 'rwm' }],
        memory: { limit: memory },
        cpu: quota ? { quota, period: CPU_PERIOD_US } : {},
        pids: { limit: spec.limits.pids },
      },
      namespaces: [
        { type: 'pid' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
        { type: 'network', path: spec.network.nsPath },
      ],
      // As runc's own defaults, and powercap: its energy counters leak what other tenants compute (RAPL side channels).
      maskedPaths: [
        '/proc/acpi',
        '/proc/asound',
        '/proc/kcore',
        '/proc/keys',
        '/proc/latency_stats',
        '/proc/timer_list',
        '/proc/timer_stats',
        '/proc/sched_debug',
        '/proc/scsi',
        '/sys/firmware',
        '/sys/devices/virtual/powercap',
      ],
      readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
      ...(spec.seccomp ? { seccomp: spec.seccomp } : {}),
    },
  };
}
