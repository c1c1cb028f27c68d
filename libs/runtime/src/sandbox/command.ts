import { realpathSync } from 'node:fs';
import path from 'node:path';
import { isLoaderEnvName } from '@slipway/domain';
import { SECCOMP_FD, sandboxSeccompBpf } from './seccomp.js';

/** A directory shown inside the sandbox: `from` outside appears at `to` (parents made 0755). */
export interface Mount {
  from: string;
  to: string;
}

/** Where a sandboxed app or build sees its files. */
export const SANDBOX_PATHS = { artifact: '/srv/artifact', home: '/home/sandbox', build: '/srv/build' } as const;

/** Who a sandboxed process runs as and what it may see. */
export interface SandboxCommandSpec {
  uid: number;
  gid: number;
  /** Read-only views (`from` outside appears at `to` inside), besides the system directories. */
  readOnly: Mount[];
  /** Writable views: HOME, a build dir. */
  writable: Mount[];
  /** Working directory, inside. */
  cwd: string;
  command: string;
  args: string[];
  /** Open-files limit (soft and hard). */
  openFiles: number;
  /** The cgroup.procs files to join before the sandbox starts (see CgroupWriter). */
  cgroupProcs: string[];
  /** Builds die with the builder; apps outlive the deployer (the next owner adopts them). */
  dieWithParent: boolean;
  /** The sandbox's network namespace (SandboxNetwork.attach), entered before bubblewrap. */
  network?: { nsPath: string; resolvConf: string };
}

/**
 * Where bubblewrap reads its options (`--args`): not on its command line, because bubblewrap's
 * own process is PID 1 inside (the reaper), and /proc/1/cmdline would show every host path it
 * binds (the data dir, the build directory, the namespace's resolv.conf) to the sandbox.
 */
const OPTIONS_FD = 4;

/** What every sandbox sees read-only: the system (no /home, /root, /var, /srv, /opt data). */
const SYSTEM_DIRS = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib64', '/lib32'];

/**
 * The command line that runs `spec.command` sandboxed: a shell (still the caller's uid) joins
 * the cgroups, hands bubblewrap its options through a descriptor (OPTIONS_FD: inside, PID 1's
 * command line shows no host path), enters the sandbox's network namespace (when given) and
 * execs bubblewrap, so every process of the sandbox is limited from its first
 * instruction; bubblewrap gives new PID, IPC and UTS namespaces, a tmpfs root with only the
 * system directories (read-only), its own /proc, /dev and /tmp, and the given paths; inside,
 * prlimit sets the open-files limit and setpriv switches to the deployment's uid/gid with no
 * supplementary groups, no capabilities (inheritable, bounding) and no_new_privs. Before the
 * command runs, bubblewrap installs the seccomp filter of seccomp.ts, read from descriptor
 * SECCOMP_FD: the caller spawns with `'pipe'` there and hands `seccomp` over (handOverSeccomp);
 * without it bubblewrap refuses to start. Pure: the caller spawns it (detached) with the
 * environment it built.
 */
export function sandboxCommand(
  spec: SandboxCommandSpec,
  executable: string = process.execPath,
): { command: string; args: string[]; seccomp: Buffer } {
  const binds: string[] = [];
  for (const dir of SYSTEM_DIRS) binds.push('--ro-bind-try', dir, dir);
  // Node itself, when it is installed outside /usr (nvm, a tarball).
  const nodePrefix = path.dirname(path.dirname(executable));
  if (!SYSTEM_DIRS.some((d) => nodePrefix === d || nodePrefix.startsWith(`${d}/`)))
    binds.push('--ro-bind', nodePrefix, nodePrefix);
  // Private /proc, /dev and /tmp before the caller's paths, which may lie under /tmp.
  binds.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
  // The namespace's resolv.conf where the system's /etc/resolv.conf leads (a symlink, with systemd-resolved).
  const readOnly = spec.network
    ? [...spec.readOnly, { from: spec.network.resolvConf, to: resolvConfTarget() }]
    : spec.readOnly;
  // bwrap would create mount points' parents 0700 (root's): reachable for nobody else.
  for (const dir of parentsOf([...readOnly, ...spec.writable].map((m) => m.to)))
    binds.push('--perms', '0755', '--dir', dir);
  for (const m of readOnly) binds.push('--ro-bind', m.from, m.to);
  for (const m of spec.writable) binds.push('--bind', m.from, m.to);
  const options = [
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--hostname',
    'sandbox',
    ...(spec.dieWithParent ? ['--die-with-parent'] : []),
    '--seccomp',
    String(SECCOMP_FD),
    '--tmpfs',
    '/',
    ...binds,
    '--chdir',
    spec.cwd,
  ];
  const bwrap = [
    ...(spec.network ? ['nsenter', `--net=${spec.network.nsPath}`, '--'] : []),
    'bwrap',
    '--args',
    String(OPTIONS_FD),
    '--',
    'prlimit',
    `--nofile=${spec.openFiles}:${spec.openFiles}`,
    '--',
    'setpriv',
    `--reuid=${spec.uid}`,
    `--regid=${spec.gid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
    spec.command,
    ...spec.args,
  ];
  // $1 = how many cgroup.procs files follow; each gets the shell's pid. Then how many bubblewrap
  // options follow: written NUL-separated to an unlinked file open as OPTIONS_FD, which bubblewrap
  // reads (`--args`) and closes. Then exec (same pid).
  const join = [
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done',
    `m=$1; shift; f=$(mktemp) || exit 125; exec 5>"$f" ${OPTIONS_FD}<"$f"; rm -f "$f"`,
    `while [ "$m" -gt 0 ]; do printf '%s\\0' "$1" >&5 || exit 125; shift; m=$((m-1)); done; exec 5>&-`,
    'exec "$@"',
  ].join('; ');
  return {
    command: '/bin/sh',
    args: [
      '-c',
      join,
      'slipway-sandbox',
      String(spec.cgroupProcs.length),
      ...spec.cgroupProcs,
      String(options.length),
      ...options,
      ...bwrap,
    ],
    seccomp: sandboxSeccompBpf(),
  };
}

/** Where /etc/resolv.conf really is (it may be a link, e.g. into /run/systemd/resolve). */
export function resolvConfTarget(file = '/etc/resolv.conf'): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** The directories above `targets` (shallowest first, no duplicates, not `/`). */
function parentsOf(targets: string[]): string[] {
  const dirs = new Set<string>();
  for (const target of targets) {
    const parts = path.posix.dirname(target).split('/').filter(Boolean);
    for (let i = 1; i <= parts.length; i++) dirs.add(`/${parts.slice(0, i).join('/')}`);
  }
  return [...dirs].sort((a, b) => a.split('/').length - b.split('/').length);
}

/**
 * A sandboxed process's environment, from scratch: the app's (or build's) own variables, then
 * what the runtime sets (a small PATH, HOME, TMPDIR and `extra`), which nothing overrides.
 * Loader variables (`LD_PRELOAD`, …; the api refuses them as secret names, but rows stored
 * before that may hold them) never pass: the wrapper programs run as root with this environment.
 */
export function sandboxEnvironment(
  own: Record<string, string>,
  runtime: { home: string; path?: string[]; extra?: Record<string, string> },
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(own))
    if (!SANDBOX_MANAGED.has(name) && !isLoaderEnvName(name)) env[name] = value;
  return {
    ...env,
    ...runtime.extra,
    PATH: (runtime.path ?? ['/usr/local/bin', '/usr/bin', '/bin']).join(':'),
    HOME: runtime.home,
    TMPDIR: '/tmp',
  };
}

/** Set by the runtime only. */
const SANDBOX_MANAGED = new Set(['PATH', 'HOME', 'TMPDIR']);
