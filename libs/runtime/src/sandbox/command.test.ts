import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolvConfTarget, sandboxCommand, sandboxEnvironment } from './command.js';

describe('sandboxEnvironment', () => {
  it('keeps the own variables, drops loader variables, and lets the runtime values win', () => {
    const env = sandboxEnvironment(
      { TOKEN: 't', DATABASE_URI: 'postgres://own', PATH: '/evil', HOME: '/evil', LD_PRELOAD: '/x.so', LD_AUDIT: '/y.so', NODE_OPTIONS: '-r /z', BASH_FUNC_f: '() { :; }' },
      { home: '/home/sandbox', path: ['/usr/bin', '/bin'], extra: { PORT: '20001' } },
    );
    expect(env).toEqual({ TOKEN: 't', DATABASE_URI: 'postgres://own', PORT: '20001', PATH: '/usr/bin:/bin', HOME: '/home/sandbox', TMPDIR: '/tmp' });
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
    const line = args.slice(5).join(' ');
    expect(line).toMatch(/^bwrap --unshare-pid --unshare-ipc --unshare-uts --hostname sandbox --die-with-parent --tmpfs \//);
    expect(line).toContain('--ro-bind /opt/modules /opt/modules');
    expect(line).toContain('--bind /data/builds/r-a0 /srv/build');
    expect(line).toContain('--chdir /srv/build/source');
    expect(line).toMatch(/setpriv --reuid=200001 --regid=200001 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \/bin\/sh -c npm ci$/);
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
    const line = args.slice(5).join(' ');
    expect(line).toMatch(/^nsenter --net=\/run\/netns\/slipway-0ad50004 -- bwrap /);
    expect(line).toContain('--ro-bind-try /etc /etc');
    expect(line.indexOf('--ro-bind /etc/netns/slipway-0ad50004/resolv.conf /etc/resolv.conf')).toBeGreaterThan(line.indexOf('--ro-bind-try /etc /etc'));
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
      expect(resolvConfTarget(path.join(dir, 'etc', 'resolv.conf'))).toBe(path.join(dir, 'run', 'resolve', 'stub.conf'));
      expect(resolvConfTarget(path.join(dir, 'etc', 'missing.conf'))).toBe(path.join(dir, 'etc', 'missing.conf'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
