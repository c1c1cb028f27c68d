import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';

/**
 * The kernel surface every sandbox (build steps and app instances) may not use, declared once
 * and rendered two ways: a classic-BPF program for bubblewrap's `--seccomp <fd>`, and an OCI
 * runtime-spec `linux.seccomp` object for a container runtime (runc). Docker's default profile
 * is the reference; unlike it this is a deny list over an allowed default (user code runs
 * ordinary programs: node, npm, git, compilers), so every entry names why it is denied.
 */

/** The architectures the filter knows; a process of any other (i386, x32, arm32) is killed. */
export type SeccompArch = 'x86_64' | 'aarch64';
export const SECCOMP_ARCHES: readonly SeccompArch[] = ['x86_64', 'aarch64'];

/** Syscall numbers of the denied calls; a call missing on an architecture does not exist there. */
const SYSCALL_NUMBERS = {
  unshare: { x86_64: 272, aarch64: 97 },
  clone: { x86_64: 56, aarch64: 220 },
  clone3: { x86_64: 435, aarch64: 435 },
  setns: { x86_64: 308, aarch64: 268 },
  ptrace: { x86_64: 101, aarch64: 117 },
  process_vm_readv: { x86_64: 310, aarch64: 270 },
  process_vm_writev: { x86_64: 311, aarch64: 271 },
  kcmp: { x86_64: 312, aarch64: 272 },
  pidfd_getfd: { x86_64: 438, aarch64: 438 },
  process_madvise: { x86_64: 440, aarch64: 440 },
  keyctl: { x86_64: 250, aarch64: 219 },
  add_key: { x86_64: 248, aarch64: 217 },
  request_key: { x86_64: 249, aarch64: 218 },
  bpf: { x86_64: 321, aarch64: 280 },
  perf_event_open: { x86_64: 298, aarch64: 241 },
  userfaultfd: { x86_64: 323, aarch64: 282 },
  io_uring_setup: { x86_64: 425, aarch64: 425 },
  io_uring_enter: { x86_64: 426, aarch64: 426 },
  io_uring_register: { x86_64: 427, aarch64: 427 },
  mount: { x86_64: 165, aarch64: 40 },
  umount2: { x86_64: 166, aarch64: 39 },
  pivot_root: { x86_64: 155, aarch64: 41 },
  chroot: { x86_64: 161, aarch64: 51 },
  fsopen: { x86_64: 430, aarch64: 430 },
  fsconfig: { x86_64: 431, aarch64: 431 },
  fsmount: { x86_64: 432, aarch64: 432 },
  fspick: { x86_64: 433, aarch64: 433 },
  move_mount: { x86_64: 429, aarch64: 429 },
  open_tree: { x86_64: 428, aarch64: 428 },
  mount_setattr: { x86_64: 442, aarch64: 442 },
  open_by_handle_at: { x86_64: 304, aarch64: 265 },
  init_module: { x86_64: 175, aarch64: 105 },
  finit_module: { x86_64: 313, aarch64: 273 },
  delete_module: { x86_64: 176, aarch64: 106 },
  create_module: { x86_64: 174 },
  query_module: { x86_64: 178 },
  get_kernel_syms: { x86_64: 177 },
  kexec_load: { x86_64: 246, aarch64: 104 },
  kexec_file_load: { x86_64: 320, aarch64: 294 },
  reboot: { x86_64: 169, aarch64: 142 },
  swapon: { x86_64: 167, aarch64: 224 },
  swapoff: { x86_64: 168, aarch64: 225 },
  acct: { x86_64: 163, aarch64: 89 },
  quotactl: { x86_64: 179, aarch64: 60 },
  quotactl_fd: { x86_64: 443, aarch64: 443 },
  nfsservctl: { x86_64: 180, aarch64: 42 },
  clock_settime: { x86_64: 227, aarch64: 112 },
  clock_adjtime: { x86_64: 305, aarch64: 266 },
  settimeofday: { x86_64: 164, aarch64: 170 },
  adjtimex: { x86_64: 159, aarch64: 171 },
  iopl: { x86_64: 172 },
  ioperm: { x86_64: 173 },
  syslog: { x86_64: 103, aarch64: 116 },
  personality: { x86_64: 135, aarch64: 92 },
  lookup_dcookie: { x86_64: 212, aarch64: 18 },
  vhangup: { x86_64: 153, aarch64: 58 },
  uselib: { x86_64: 134 },
  ustat: { x86_64: 136 },
  sysfs: { x86_64: 139 },
  _sysctl: { x86_64: 156 },
  fanotify_init: { x86_64: 300, aarch64: 262 },
  sethostname: { x86_64: 170, aarch64: 161 },
  setdomainname: { x86_64: 171, aarch64: 162 },
} satisfies Record<string, Partial<Record<SeccompArch, number>>>;

export type SyscallName = keyof typeof SYSCALL_NUMBERS;

/** The call's number on `arch`, or undefined where it does not exist. */
export function syscallNumber(name: SyscallName, arch: SeccompArch): number | undefined {
  return (SYSCALL_NUMBERS[name] as Partial<Record<SeccompArch, number>>)[arch];
}

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: every namespace flag clone(2) takes. */
export const CLONE_NAMESPACE_FLAGS = 0x7e020000;
/** CLONE_NEWTIME: unshare(2) takes it too (in clone(2) that bit belongs to the exit signal). */
const CLONE_NEWTIME = 0x80;

export const ERRNO = { EPERM: 1, ENOSYS: 38 } as const;

/** One entry of the policy: these calls fail with `errno`, always or when their first argument matches. */
export interface SeccompRule {
  syscalls: SyscallName[];
  errno: keyof typeof ERRNO;
  /** Denied only when the first argument has any of these bits set. */
  anyBitOf?: number;
  /** Denied unless the first argument (its low 32 bits) is one of these values. */
  allowedValues?: number[];
  why: string;
}

/** The policy. A call appears in one rule at most (the BPF rendering relies on it). */
export const SANDBOX_SECCOMP_POLICY: readonly SeccompRule[] = [
  {
    syscalls: ['unshare'],
    errno: 'EPERM',
    anyBitOf: CLONE_NAMESPACE_FLAGS | CLONE_NEWTIME,
    why: 'new namespaces (user namespaces above all) open kernel surface meant for root',
  },
  {
    syscalls: ['clone'],
    errno: 'EPERM',
    anyBitOf: CLONE_NAMESPACE_FLAGS,
    why: 'the same namespaces, made by clone; threads and fork stay allowed',
  },
  {
    syscalls: ['clone3'],
    errno: 'ENOSYS',
    why: 'its flags live in memory a filter cannot read: libc falls back to clone on ENOSYS',
  },
  { syscalls: ['setns'], errno: 'EPERM', why: 'joining another namespace' },
  {
    syscalls: ['ptrace', 'process_vm_readv', 'process_vm_writev', 'kcmp', 'pidfd_getfd', 'process_madvise'],
    errno: 'EPERM',
    why: 'reading or steering other processes',
  },
  { syscalls: ['keyctl', 'add_key', 'request_key'], errno: 'EPERM', why: 'the kernel keyring is not namespaced' },
  {
    syscalls: ['bpf', 'perf_event_open', 'userfaultfd'],
    errno: 'EPERM',
    why: 'kernel attack surface with a long record of exploits',
  },
  {
    syscalls: ['io_uring_setup', 'io_uring_enter', 'io_uring_register'],
    errno: 'ENOSYS',
    why: 'kernel attack surface; libuv and others fall back to threads',
  },
  {
    syscalls: [
      'mount',
      'umount2',
      'pivot_root',
      'chroot',
      'fsopen',
      'fsconfig',
      'fsmount',
      'fspick',
      'move_mount',
      'open_tree',
      'mount_setattr',
    ],
    errno: 'EPERM',
    why: 'the filesystem view is fixed by the sandbox',
  },
  {
    syscalls: ['open_by_handle_at'],
    errno: 'EPERM',
    why: 'opens files by handle, past the mount view (the "shocker" escape)',
  },
  {
    syscalls: [
      'init_module',
      'finit_module',
      'delete_module',
      'create_module',
      'query_module',
      'get_kernel_syms',
      'kexec_load',
      'kexec_file_load',
    ],
    errno: 'EPERM',
    why: 'kernel modules and kexec',
  },
  {
    syscalls: [
      'reboot',
      'swapon',
      'swapoff',
      'acct',
      'quotactl',
      'quotactl_fd',
      'nfsservctl',
      'vhangup',
      'lookup_dcookie',
      'fanotify_init',
    ],
    errno: 'EPERM',
    why: 'machine administration',
  },
  {
    syscalls: ['clock_settime', 'clock_adjtime', 'settimeofday', 'adjtimex'],
    errno: 'EPERM',
    why: "the clock is the machine's",
  },
  { syscalls: ['sethostname', 'setdomainname'], errno: 'EPERM', why: 'host identity' },
  { syscalls: ['iopl', 'ioperm'], errno: 'EPERM', why: 'raw I/O ports' },
  { syscalls: ['syslog'], errno: 'EPERM', why: 'the kernel log leaks addresses' },
  { syscalls: ['uselib', 'ustat', 'sysfs', '_sysctl'], errno: 'EPERM', why: 'obsolete calls nothing needs' },
  {
    syscalls: ['personality'],
    errno: 'EPERM',
    // PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32|UNAME26 and the query: Docker's safe values.
    allowedValues: [0x0, 0x8, 0x20000, 0x20008, 0xffffffff],
    why: 'execution domains beyond the safe ones (ADDR_NO_RANDOMIZE turns ASLR off, READ_IMPLIES_EXEC)',
  },
];

// ---- classic BPF --------------------------------------------------------------------------

/** AUDIT_ARCH_* values as `seccomp_data.arch` holds them. */
const AUDIT_ARCH: Record<SeccompArch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
/** x86_64 numbers at or above this are the x32 ABI: another architecture in disguise. */
const X32_SYSCALL_BIT = 0x40000000;

const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const RET_KILL_PROCESS = 0x80000000;

/** Offsets in `struct seccomp_data`: nr, arch, then args[] (low 32 bits first: both arches are little-endian). */
const DATA_NR = 0;
const DATA_ARCH = 4;
const DATA_ARG0_LOW = 16;

/** Opcodes: BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, JMP|JSET|K, JMP|JA, RET|K. */
export const BPF = { LD_ABS: 0x20, JEQ: 0x15, JGE: 0x35, JSET: 0x45, JA: 0x05, RET: 0x06 } as const;

/** One `struct sock_filter`. */
export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

const ins = (code: number, k: number, jt = 0, jf = 0): BpfInstruction => ({ code, jt, jf, k: k >>> 0 });
const ret = (k: number) => ins(BPF.RET, k);

/** The checks of one architecture: nr in A, each denied call tested in turn, allow at the end. */
function archBlock(arch: SeccompArch, policy: readonly SeccompRule[]): BpfInstruction[] {
  const out: BpfInstruction[] = [ins(BPF.LD_ABS, DATA_NR)];
  if (arch === 'x86_64') out.push(ins(BPF.JGE, X32_SYSCALL_BIT, 0, 1), ret(RET_KILL_PROCESS));
  for (const rule of policy) {
    const deny = ret(RET_ERRNO | ERRNO[rule.errno]);
    for (const name of rule.syscalls) {
      const nr = syscallNumber(name, arch);
      if (nr === undefined) continue;
      if (rule.anyBitOf !== undefined) {
        // nr? → load arg0; any bit set → deny, else allow (A no longer holds nr).
        out.push(
          ins(BPF.JEQ, nr, 0, 4),
          ins(BPF.LD_ABS, DATA_ARG0_LOW),
          ins(BPF.JSET, rule.anyBitOf, 0, 1),
          deny,
          ret(RET_ALLOW),
        );
      } else if (rule.allowedValues) {
        const values = rule.allowedValues;
        out.push(ins(BPF.JEQ, nr, 0, values.length + 3), ins(BPF.LD_ABS, DATA_ARG0_LOW));
        values.forEach((value, i) => out.push(ins(BPF.JEQ, value, values.length - i, 0)));
        out.push(deny, ret(RET_ALLOW));
      } else {
        out.push(ins(BPF.JEQ, nr, 0, 1), deny);
      }
    }
  }
  out.push(ret(RET_ALLOW));
  return out;
}

/**
 * The policy as a classic-BPF program: the architecture first (x86_64, aarch64; anything else,
 * x32 included, kills the process), then the architecture's checks. Every conditional jump is
 * short (the blocks are skipped with an unconditional jump), so the policy may grow.
 */
export function seccompProgram(policy: readonly SeccompRule[] = SANDBOX_SECCOMP_POLICY): BpfInstruction[] {
  assertOnePerSyscall(policy);
  const out: BpfInstruction[] = [ins(BPF.LD_ABS, DATA_ARCH)];
  for (const arch of SECCOMP_ARCHES) {
    const block = archBlock(arch, policy);
    out.push(ins(BPF.JEQ, AUDIT_ARCH[arch], 1, 0), ins(BPF.JA, block.length), ...block);
  }
  out.push(ret(RET_KILL_PROCESS));
  if (out.length > 4096) throw new Error(`The seccomp program has ${out.length} instructions; the kernel takes 4096.`);
  return out;
}

/** The program as bubblewrap reads it from `--seccomp <fd>`: `struct sock_filter[]`, little-endian. */
export function seccompBpf(program: BpfInstruction[] = seccompProgram()): Buffer {
  const buf = Buffer.alloc(program.length * 8);
  program.forEach(({ code, jt, jf, k }, i) => {
    if (jt > 255 || jf > 255) throw new Error(`Jump too long at instruction ${i}.`);
    buf.writeUInt16LE(code, i * 8);
    buf.writeUInt8(jt, i * 8 + 2);
    buf.writeUInt8(jf, i * 8 + 3);
    buf.writeUInt32LE(k, i * 8 + 4);
  });
  return buf;
}

function assertOnePerSyscall(policy: readonly SeccompRule[]): void {
  const seen = new Set<string>();
  for (const name of policy.flatMap((r) => r.syscalls)) {
    if (seen.has(name)) throw new Error(`seccomp policy: '${name}' appears in two rules.`);
    seen.add(name);
  }
}

// ---- OCI runtime-spec ---------------------------------------------------------------------

export interface OciSeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: 'SCMP_CMP_MASKED_EQ';
}

export interface OciSeccompSyscall {
  names: string[];
  action: 'SCMP_ACT_ERRNO';
  errnoRet: number;
  args?: OciSeccompArg[];
}

/** `linux.seccomp` of an OCI runtime spec (config.json). */
export interface OciSeccomp {
  defaultAction: 'SCMP_ACT_ALLOW';
  architectures: string[];
  syscalls: OciSeccompSyscall[];
}

const OCI_ARCH: Record<SeccompArch, string> = { x86_64: 'SCMP_ARCH_X86_64', aarch64: 'SCMP_ARCH_AARCH64' };

/** The bits of `mask`, one by one. */
function bitsOf(mask: number): number[] {
  const bits: number[] = [];
  for (let bit = 1; bit <= mask && bit !== 0; bit = (bit << 1) >>> 0) if ((mask & bit) >>> 0) bits.push(bit);
  return bits;
}

/**
 * The policy for runc. Entries are alternatives, and runc turns several conditions on one
 * argument into alternatives too, so every entry here has a single condition. "Any namespace
 * bit" becomes one entry per bit (`(arg & bit) == bit`); "none but these values" one entry per
 * bit outside the allowed values' bits, so exactly their combinations pass (for personality:
 * 0, PER_LINUX32, UNAME26 and both; unlike the BPF program, the query value 0xffffffff is denied
 * here, having every bit). Only the listed architectures are in the filter; the runtime kills a
 * process of any other.
 */
export function ociSeccomp(policy: readonly SeccompRule[] = SANDBOX_SECCOMP_POLICY): OciSeccomp {
  assertOnePerSyscall(policy);
  const syscalls: OciSeccompSyscall[] = [];
  for (const rule of policy) {
    const base = { names: [...rule.syscalls], action: 'SCMP_ACT_ERRNO' as const, errnoRet: ERRNO[rule.errno] };
    if (rule.anyBitOf !== undefined) {
      for (const bit of bitsOf(rule.anyBitOf))
        syscalls.push({ ...base, args: [{ index: 0, value: bit, valueTwo: bit, op: 'SCMP_CMP_MASKED_EQ' }] });
    } else if (rule.allowedValues) {
      const allowedBits = rule.allowedValues.filter((v) => v !== 0xffffffff).reduce((a, v) => (a | v) >>> 0, 0);
      for (const bit of bitsOf(~allowedBits >>> 0))
        syscalls.push({ ...base, args: [{ index: 0, value: bit, valueTwo: bit, op: 'SCMP_CMP_MASKED_EQ' }] });
    } else {
      syscalls.push(base);
    }
  }
  return { defaultAction: 'SCMP_ACT_ALLOW', architectures: SECCOMP_ARCHES.map((a) => OCI_ARCH[a]), syscalls };
}

/** Where bubblewrap finds the program: the spawner hands it over as this descriptor (see `handOverSeccomp`). */
export const SECCOMP_FD = 3;

let rendered: Buffer | undefined;

/** The sandbox policy's BPF program, rendered once. */
export function sandboxSeccompBpf(): Buffer {
  rendered ??= seccompBpf();
  return rendered;
}

/**
 * Writes the program into descriptor SECCOMP_FD of a child spawned with `'pipe'` there
 * (bubblewrap reads it to the end, then closes it before anything sandboxed runs), and closes
 * our end. A child that dies before reading only loses the write: its exit says why.
 */
export function handOverSeccomp(child: ChildProcess, program: Buffer): void {
  const pipe = child.stdio[SECCOMP_FD] as Writable | null | undefined;
  if (!pipe) return;
  pipe.on('error', () => undefined);
  pipe.end(program, () => pipe.destroy());
}
