import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { resolvConfTarget, SANDBOX_PATHS, sandboxCommand, sandboxEnvironment } from './command.js';
import { handOverSeccomp } from './seccomp.js';

describe('sandboxEnvironment', () => {
  it('keeps the own variables, drops loader variables, and lets the runtime values win', () => {
    const env = sandboxEnvironment(
      {
        TOKEN: 't',
        DATABASE_URI: 'postgres://own',
        PATH: '/evil',
        HOME: '/evil',
        LD_PRELOAD: '/x.so',
        LD_AUDIT: '/y.so',
        NODE_OPTIONS: '-r /z',
        BASH_FUNC_f: '() { :; }',
      },
      { home: '/home/sandbox', path: ['/usr/bin', '/bin'], extra: { PORT: '20001' } },
    );
    expect(env).toEqual({
      TOKEN: 't',
      DATABASE_URI: 'postgres://own',
      PORT: '20001',
      PATH: '/usr/bin:/bin',
      HOME: '/home/sandbox',
      TMPDIR: '/tmp',
    });
  });
});

describe('sandboxCommand', () => {
  it('joins the cgroups, then bubblewrap with the mounts, then drops to the uid with no groups or capabilities', () => {
    const { command, args } = sandboxCommand(
      {
        uid: 200001,
        gid: 200001,
        readOnly: [{ from: '/opt/modules', to: '/opt/modules' }],
        writable: [{ from: '/data/builds/r-a0', to: '/srv/build' }],
        cwd: '/srv/build/source',
        command: '/bin/sh',
        args: ['-c', 'npm ci'],
        openFiles: 1024,
        cgroupProcs: ['/sys/fs/cgroup/memory/slipway/b-r-a0/cgroup.procs'],
        dieWithParent: true,
      },
      '/usr/bin/node',
    );
    expect(command).toBe('/bin/sh');
    expect(args.slice(3, 5)).toEqual(['1', '/sys/fs/cgroup/memory/slipway/b-r-a0/cgroup.procs']);
    // bubblewrap's options, handed over through a descriptor, then its command line.
    const options = args.slice(6, 6 + Number(args[5])).join(' ');
    expect(options).toMatch(
      /^--unshare-pid --unshare-ipc --unshare-uts --hostname sandbox --die-with-parent --seccomp 3 --tmpfs \//,
    );
    expect(options).toContain('--ro-bind /opt/modules /opt/modules');
    expect(options).toContain('--bind /data/builds/r-a0 /srv/build');
    expect(options).toMatch(/--chdir \/srv\/build\/source$/);
    const line = args.slice(6 + Number(args[5])).join(' ');
    expect(line).toMatch(
      new RegExp(
        String.raw`^bwrap --args 4 -- prlimit --nofile=1024:1024 -- setpriv --reuid=200001 --regid=200001 ` +
          String.raw`--clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \/bin\/sh -c npm ci$`,
      ),
    );
    expect(line).not.toContain('/data/builds');
  });

  it('enters the network namespace after the cgroups, before bubblewrap, and shows its resolv.conf', () => {
    const { args } = sandboxCommand(
      {
        uid: 200001,
        gid: 200001,
        readOnly: [],
        writable: [],
        cwd: '/',
        command: '/bin/true',
        args: [],
        openFiles: 1024,
        cgroupProcs: ['/sys/fs/cgroup/slipway/i-x/cgroup.procs'],
        dieWithParent: false,
        network: { nsPath: '/run/netns/slipway-0ad50004', resolvConf: '/etc/netns/slipway-0ad50004/resolv.conf' },
      },
      '/usr/bin/node',
    );
    const options = args.slice(6, 6 + Number(args[5])).join(' ');
    expect(args.slice(6 + Number(args[5])).join(' ')).toMatch(
      /^nsenter --net=\/run\/netns\/slipway-0ad50004 -- bwrap --args 4 -- /,
    );
    expect(options).toContain('--ro-bind-try /etc /etc');
    expect(options.indexOf('--ro-bind /etc/netns/slipway-0ad50004/resolv.conf /etc/resolv.conf')).toBeGreaterThan(
      options.indexOf('--ro-bind-try /etc /etc'),
    );
  });
});

describe('a sandboxed process (real bubblewrap)', () => {
  const root = process.getuid?.() === 0;

  it("sees no host path in PID 1's command line, no /sys/devices/virtual/powercap, and PID 1 still reaps", async (ctx) => {
    if (!root) return ctx.skip('bubblewrap and setpriv to another uid need root');
    const host = mkdtempSync(path.join(tmpdir(), 'slipway-host-path-'));
    try {
      const script = [
        'tr "\\0" " " </proc/1/cmdline; echo',
        'ls /proc/self/fd | tr "\\n" " "; echo',
        'test -e /sys/devices/virtual/powercap && echo powercap-visible || echo powercap-hidden',
        // An orphan: re-parented to PID 1, which must reap it.
        '( sleep 0.1 & ); sleep 0.5; zombies=$(cat /proc/[0-9]*/stat | grep -c "^[0-9]* ([^)]*) Z"); echo "zombies=$zombies"',
      ].join('; ');
      const { command, args, seccomp } = sandboxCommand({
        uid: 65534,
        gid: 65534,
        readOnly: [{ from: host, to: SANDBOX_PATHS.artifact }],
        writable: [],
        cwd: '/',
        command: '/bin/sh',
        args: ['-c', script],
        openFiles: 1024,
        cgroupProcs: [],
        dieWithParent: true,
      });
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
      handOverSeccomp(child, seccomp);
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err += d));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      expect(code, err).toBe(0);
      const [pid1, fds, powercap, zombies] = out.trim().split('\n');
      expect(pid1).toMatch(/^bwrap --args 4 -- prlimit --nofile=1024:1024 -- setpriv /);
      expect(pid1).not.toContain(host);
      expect(pid1).not.toContain(tmpdir());
      // The options' descriptor is closed by bubblewrap: nothing inside reads them back.
      expect(fds!.trim().split(' ')).not.toContain('4');
      expect(powercap).toBe('powercap-hidden');
      expect(zombies).toBe('zombies=0');
    } finally {
      rmSync(host, { recursive: true, force: true });
    }
  });
});

describe('resolvConfTarget', () => {
  it('follows a resolv.conf link (systemd-resolved) to the file the namespace one must cover', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-resolv-'));
    try {
      mkdirSync(path.join(dir, 'run', 'resolve'), { recursive: true });
      writeFileSync(path.join(dir, 'run', 'resolve', 'stub.conf'), 'nameserver 127.0.0.53\n');
      mkdirSync(path.join(dir, 'etc'));
      symlinkSync('../run/resolve/stub.conf', path.join(dir, 'etc', 'resolv.conf'));
      expect(resolvConfTarget(path.join(dir, 'etc', 'resolv.conf'))).toBe(
        path.join(dir, 'run', 'resolve', 'stub.conf'),
      );
      expect(resolvConfTarget(path.join(dir, 'etc', 'missing.conf'))).toBe(path.join(dir, 'etc', 'missing.conf'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
