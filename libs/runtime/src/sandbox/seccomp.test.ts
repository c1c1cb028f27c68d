import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxCommand } from './command.js';
import {
  BPF,
  CLONE_NAMESPACE_FLAGS,
  handOverSeccomp,
  ociSeccomp,
  SANDBOX_SECCOMP_POLICY,
  sandboxSeccompBpf,
  SECCOMP_ARCHES,
  seccompBpf,
  seccompProgram,
  syscallNumber,
  type BpfInstruction,
  type SeccompArch,
} from './seccomp.js';

/**
 * The seccomp policy's renderings: the BPF program run through a small classic-BPF interpreter
 * (what the kernel would answer for a given architecture, call and first argument), the bytes
 * bubblewrap reads, the OCI object; then the real thing: a process under bubblewrap with the
 * filter (root and bubblewrap needed), against the same process without it.
 */

const AUDIT = { x86_64: 0xc000003e, aarch64: 0xc00000b7, i386: 0x40000003, arm: 0x40000028 } as const;
const ALLOW = 0x7fff0000;
const KILL_PROCESS = 0x80000000;
const errno = (n: number) => 0x00050000 + n;
const EPERM = errno(1);
const ENOSYS = errno(38);

/** Runs the program on one `seccomp_data` (nr, arch, args[0] low word): the action it returns. */
function evaluate(program: BpfInstruction[], data: { arch: number; nr: number; arg0?: number }): number {
  const word = (offset: number) => ({ 0: data.nr, 4: data.arch, 16: data.arg0 ?? 0 })[offset] ?? 0;
  let a = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const { code, jt, jf, k } = program[pc]!;
    if (code === BPF.LD_ABS) a = word(k) >>> 0;
    else if (code === BPF.RET) return k >>> 0;
    else if (code === BPF.JA) pc += k;
    else if (code === BPF.JEQ) pc += a === k ? jt : jf;
    else if (code === BPF.JGE) pc += a >= k ? jt : jf;
    else if (code === BPF.JSET) pc += (a & k) >>> 0 ? jt : jf;
    else throw new Error(`unknown opcode ${code} at ${pc}`);
  }
  throw new Error('fell off the end of the program');
}

const program = seccompProgram();
const call = (arch: SeccompArch, name: Parameters<typeof syscallNumber>[0], arg0?: number) =>
  evaluate(program, { arch: AUDIT[arch], nr: syscallNumber(name, arch)!, arg0 });

describe('the seccomp BPF program', () => {
  it.each(SECCOMP_ARCHES)('on %s: denies every call of the policy that exists there, each with its errno', (arch) => {
    let checked = 0;
    for (const rule of SANDBOX_SECCOMP_POLICY) {
      const denied = rule.errno === 'ENOSYS' ? ENOSYS : EPERM;
      for (const name of rule.syscalls) {
        if (syscallNumber(name, arch) === undefined) continue;
        const arg0 = rule.anyBitOf !== undefined ? 0x10000000 : rule.allowedValues ? 0x0040000 : 0;
        expect(call(arch, name, arg0), `${arch} ${name}`).toBe(denied);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('denies unshare and clone with a namespace flag, and allows them without one (threads, fork, unshare(CLONE_FS))', () => {
    for (const arch of SECCOMP_ARCHES) {
      for (const flag of [0x10000000, 0x40000000, 0x00020000, 0x20000000, 0x02000000, 0x04000000, 0x08000000]) {
        expect(call(arch, 'unshare', flag), `${arch} unshare ${flag.toString(16)}`).toBe(EPERM);
        expect(call(arch, 'clone', flag | 17), `${arch} clone ${flag.toString(16)}`).toBe(EPERM);
      }
      expect(call(arch, 'unshare', 0x80), 'CLONE_NEWTIME').toBe(EPERM);
      expect(call(arch, 'unshare', 0x200)).toBe(ALLOW); // CLONE_FS
      expect(call(arch, 'clone', 0x003d0f00)).toBe(ALLOW); // pthread_create's flags
      expect(call(arch, 'clone', 0x01200011)).toBe(ALLOW); // fork: CHILD_SETTID|CHILD_CLEARTID|SIGCHLD
      expect(call(arch, 'clone3')).toBe(ENOSYS);
    }
    expect(CLONE_NAMESPACE_FLAGS).toBe(0x7e020000);
  });

  it('allows only the safe personality values', () => {
    for (const value of [0, 8, 0x20000, 0x20008, 0xffffffff]) expect(call('x86_64', 'personality', value)).toBe(ALLOW);
    for (const value of [0x0040000, 0x0400000, 0x1]) expect(call('aarch64', 'personality', value)).toBe(EPERM);
  });

  it('allows ordinary calls (read, write, openat, execve)', () => {
    for (const nr of [0, 1, 257, 59]) expect(evaluate(program, { arch: AUDIT.x86_64, nr })).toBe(ALLOW);
    for (const nr of [63, 64, 56, 221]) expect(evaluate(program, { arch: AUDIT.aarch64, nr })).toBe(ALLOW);
  });

  it('kills a process of a foreign architecture (i386, arm32) and the x32 ABI', () => {
    expect(evaluate(program, { arch: AUDIT.i386, nr: 3 })).toBe(KILL_PROCESS);
    expect(evaluate(program, { arch: AUDIT.arm, nr: 3 })).toBe(KILL_PROCESS);
    expect(evaluate(program, { arch: AUDIT.x86_64, nr: 0x40000000 + 272 })).toBe(KILL_PROCESS);
  });

  it('is laid out as struct sock_filter[] (8 bytes each, little-endian)', () => {
    const bytes = seccompBpf(program);
    expect(bytes.length).toBe(program.length * 8);
    expect(bytes.readUInt16LE(0)).toBe(BPF.LD_ABS);
    expect(bytes.readUInt32LE(4)).toBe(4); // seccomp_data.arch
    expect(bytes.readUInt16LE(bytes.length - 8)).toBe(BPF.RET);
    expect(bytes.readUInt32LE(bytes.length - 4)).toBe(KILL_PROCESS);
    expect(sandboxSeccompBpf().equals(bytes)).toBe(true);
  });

  it('refuses a policy naming a call twice', () => {
    expect(() =>
      seccompProgram([...SANDBOX_SECCOMP_POLICY, { syscalls: ['ptrace'], errno: 'EPERM', why: 'again' }]),
    ).toThrow(/ptrace/);
  });
});

describe('the OCI linux.seccomp rendering', () => {
  const oci = ociSeccomp();
  it('allows by default on the two architectures and denies every call of the policy', () => {
    expect(oci.defaultAction).toBe('SCMP_ACT_ALLOW');
    expect(oci.architectures).toEqual(['SCMP_ARCH_X86_64', 'SCMP_ARCH_AARCH64']);
    const named = new Set(oci.syscalls.flatMap((s) => s.names));
    for (const name of SANDBOX_SECCOMP_POLICY.flatMap((r) => r.syscalls)) expect(named.has(name), name).toBe(true);
    expect(oci.syscalls.find((s) => s.names.includes('clone3'))).toEqual({
      names: ['clone3'],
      action: 'SCMP_ACT_ERRNO',
      errnoRet: 38,
    });
  });

  it('denies unshare/clone once per namespace bit, and personality with any bit outside the safe values', () => {
    const clone = oci.syscalls.filter((s) => s.names.includes('clone'));
    expect(clone.map((s) => s.args![0]!.value).reduce((a, b) => a | b, 0) >>> 0).toBe(CLONE_NAMESPACE_FLAGS);
    for (const s of clone)
      expect(s.args).toEqual([
        { index: 0, value: s.args![0]!.value, valueTwo: s.args![0]!.value, op: 'SCMP_CMP_MASKED_EQ' },
      ]);
    expect(oci.syscalls.filter((s) => s.names.includes('unshare'))).toHaveLength(8);
    // One condition per entry (runc makes several on one argument alternatives): every bit but PER_LINUX32's and UNAME26's.
    for (const s of oci.syscalls) expect(s.args?.length ?? 1, s.names.join()).toBe(1);
    const personality = oci.syscalls.filter((s) => s.names.includes('personality')).map((s) => s.args![0]!.value);
    expect(personality).toHaveLength(30);
    expect(personality.reduce((a, b) => (a | b) >>> 0, 0)).toBe(~0x20008 >>> 0);
  });
});

const root = process.getuid?.() === 0;

/** `sh -c script` under bubblewrap as nobody, with the filter handed over on fd 3 or without it. */
function underBwrap(script: string, withFilter: boolean): Promise<{ code: number | null; out: string }> {
  const bwrap = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--unshare-pid',
    ...(withFilter ? ['--seccomp', '3'] : []),
  ];
  const drop = [
    'setpriv',
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
  ];
  const child = spawn('bwrap', [...bwrap, '--', ...drop, '/bin/sh', '-c', script], {
    stdio: ['ignore', 'pipe', 'pipe', withFilter ? 'pipe' : 'ignore'],
  });
  if (withFilter) handOverSeccomp(child, sandboxSeccompBpf());
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out: out.trim() })));
}

describe.skipIf(!root)('a process under the filter (bubblewrap)', () => {
  it('cannot unshare a user namespace, which the same process without the filter can', async () => {
    const script = 'unshare -U id -u; echo "exit=$?"';
    const without = await underBwrap(script, false);
    expect(without.out, 'the kernel allows unprivileged user namespaces here, so the filter is what stops it').toMatch(
      /exit=0$/,
    );
    const filtered = await underBwrap(script, true);
    expect(filtered.out).toMatch(/unshare failed: Operation not permitted\nexit=1$/);
  });

  it('still runs node and git, has no descriptor 3 left, and reports seccomp mode 2', async () => {
    const got = await underBwrap(
      'node -e "console.log(6*7)" && git --version && { [ -e /proc/$$/fd/3 ] && echo fd3-open || echo ' +
        'fd3-closed; } && grep ^Seccomp: /proc/self/status',
      true,
    );
    expect(got.code, got.out).toBe(0);
    expect(got.out.split('\n')).toEqual(['42', expect.stringMatching(/^git version/), 'fd3-closed', 'Seccomp:\t2']);
  });

  it('fails closed: sandboxCommand asks bubblewrap for the filter on fd 3, and without it nothing runs', async () => {
    const { args, seccomp } = sandboxCommand({
      uid: 65534,
      gid: 65534,
      readOnly: [],
      writable: [],
      cwd: '/',
      command: '/bin/echo',
      args: ['ran'],
      openFiles: 256,
      cgroupProcs: [],
      dieWithParent: true,
    });
    expect(args.join(' ')).toContain('--seccomp 3 ');
    expect(seccomp.equals(sandboxSeccompBpf())).toBe(true);
    const child = spawn('/bin/sh', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).not.toBe(0);
    expect(out).not.toContain('ran');
  });
});

const runcUsable = root && existsSync('/usr/sbin/runc') && existsSync('/bin/busybox');

/**
 * `sh -c script` in a runc container as nobody: a busybox-static root (read-only), its own PID,
 * IPC, UTS, mount and network namespaces, the OCI rendering as `linux.seccomp` or none.
 */
function underRunc(script: string, withFilter: boolean): { status: number | null; out: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-oci-'));
  const id = `slipway-seccomp-test-${process.pid}-${withFilter ? 'f' : 'n'}`;
  try {
    mkdirSync(path.join(dir, 'rootfs/bin'), { recursive: true });
    for (const d of ['proc', 'dev', 'tmp']) mkdirSync(path.join(dir, 'rootfs', d));
    copyFileSync('/bin/busybox', path.join(dir, 'rootfs/bin/busybox'));
    chmodSync(path.join(dir, 'rootfs/bin/busybox'), 0o755);
    for (const applet of ['sh', 'unshare', 'linux32', 'echo'])
      symlinkSync('busybox', path.join(dir, 'rootfs/bin', applet));
    execFileSync('runc', ['spec'], { cwd: dir });
    const spec = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
    spec.process = { ...spec.process, terminal: false, user: { uid: 65534, gid: 65534 }, args: ['sh', '-c', script] };
    spec.root = { path: 'rootfs', readonly: true };
    spec.mounts = spec.mounts.filter((m: { destination: string }) => m.destination !== '/sys');
    spec.linux.cgroupsPath = `/${id}`;
    if (withFilter) spec.linux.seccomp = ociSeccomp();
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify(spec));
    const run = spawnSync('runc', ['run', id], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    return { status: run.status, out: `${run.stdout}${run.stderr}`.trim() };
  } finally {
    spawnSync('runc', ['delete', '-f', id]);
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!runcUsable)('a container under the OCI rendering (runc)', () => {
  it('cannot unshare a user namespace, which the same container without it can; PER_LINUX32 still works', () => {
    const script = 'unshare -U true; echo "U=$?"; linux32 true; echo "L=$?"';
    expect(underRunc(script, false)).toEqual({ status: 0, out: 'U=0\nL=0' });
    const filtered = underRunc(script, true);
    expect(filtered.status, filtered.out).toBe(0);
    expect(filtered.out).toMatch(/unshare\(0x10000000\): Operation not permitted/);
    expect(filtered.out.split('\n').filter((l) => /^[UL]=/.test(l))).toEqual(['U=1', 'L=0']);
  });
});
