import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { symlinkSync } from 'node:fs';
import { checkEntrypoint, resolveInRoot } from './entrypoint-check.js';
import { cleanToolError, repositoryOf } from './image-cache.js';
import { containerStartFailure } from './start-failure.js';
import { ImageError, layoutManifestDigest, readImageConfig } from './image-config.js';
import { INIT_PATH, ociConfig, type ContainerSpec } from './oci-spec.js';
import { ociSeccomp } from '../sandbox/seccomp.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An OCI layout holding only a manifest and a config (no layers needed to read them). */
function layout(config: object): { dir: string; digest: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-layout-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'blobs/sha256'), { recursive: true });
  const put = (data: string) => {
    const hex = createHash('sha256').update(data).digest('hex');
    writeFileSync(path.join(dir, 'blobs/sha256', hex), data);
    return `sha256:${hex}`;
  };
  const digest = put(JSON.stringify({ schemaVersion: 2, config: { digest: put(JSON.stringify(config)) }, layers: [] }));
  writeFileSync(
    path.join(dir, 'index.json'),
    JSON.stringify({ manifests: [{ digest, annotations: { 'org.opencontainers.image.ref.name': 'image' } }] }),
  );
  return { dir, digest };
}

describe('repositoryOf', () => {
  it('keeps the registry host (and port) and the repository path, without tag or digest', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(repositoryOf(`127.0.0.1:5000/d/web@${digest}`)).toBe('127.0.0.1:5000/d/web');
    expect(repositoryOf('127.0.0.1:5000/d/web:v1')).toBe('127.0.0.1:5000/d/web');
    expect(repositoryOf('registry.example/team/web')).toBe('registry.example/team/web');
    expect(repositoryOf('[::1]:5000/team/web:v2')).toBe('[::1]:5000/team/web');
  });
});

describe('readImageConfig', () => {
  it('joins Entrypoint and Cmd, parses Env, WorkingDir and Labels, and notices an init entrypoint', async () => {
    const { dir, digest } = layout({
      architecture: 'amd64',
      os: 'linux',
      config: {
        Entrypoint: ['/sbin/tini', '--'],
        Cmd: ['node', 'server.js'],
        Env: ['PATH=/usr/bin', 'A=b=c'],
        WorkingDir: '/app',
        User: 'app:app',
        Labels: { 'dev.slipway.agent-server': 'true' },
      },
    });
    expect(await layoutManifestDigest(dir, 'image')).toBe(digest);
    expect(await readImageConfig(dir, digest, 'x64')).toEqual({
      command: ['/sbin/tini', '--', 'node', 'server.js'],
      env: { PATH: '/usr/bin', A: 'b=c' },
      workingDir: '/app',
      hasInit: true,
      user: 'app:app',
      labels: { 'dev.slipway.agent-server': 'true' },
    });
  });

  it('refuses an image with nothing to run, for another architecture or OS', async () => {
    const none = layout({ architecture: 'amd64', os: 'linux', config: {} });
    await expect(readImageConfig(none.dir, none.digest, 'x64')).rejects.toThrow(/neither an Entrypoint nor a Cmd/);
    const arm = layout({ architecture: 'arm64', os: 'linux', config: { Cmd: ['x'] } });
    await expect(readImageConfig(arm.dir, arm.digest, 'x64')).rejects.toThrow(
      'The image is for arm64; this machine runs linux/amd64 images.',
    );
    const win = layout({ architecture: 'amd64', os: 'windows', config: { Cmd: ['x'] } });
    await expect(readImageConfig(win.dir, win.digest, 'x64')).rejects.toBeInstanceOf(ImageError);
  });
});

describe('ociConfig', () => {
  const spec: ContainerSpec = {
    rootfs: '/data/images/abc/bundle/rootfs',
    command: ['/bin/server', '--port', '8080'],
    env: { PORT: '31000', PATH: '/bin' },
    cwd: '/',
    uid: 900_001,
    gid: 900_001,
    init: '/usr/bin/catatonit',
    cgroupsPath: '/slipway/i-1',
    network: { nsPath: '/run/netns/slipway-1', resolvConf: '/etc/netns/slipway-1/resolv.conf' },
    limits: { memoryMb: 256, cpu: 0.5, pids: 512 },
    openFiles: 1_048_576,
    seccomp: ociSeccomp(),
  };

  it('runs the image as the deployment uid with no capabilities, read-only, in the given namespace and cgroup', () => {
    const c = ociConfig(spec) as any;
    expect(c.process).toMatchObject({
      terminal: false,
      user: { uid: 900_001, gid: 900_001, additionalGids: [] },
      noNewPrivileges: true,
      env: ['PORT=31000', 'PATH=/bin'],
    });
    expect(c.process.args).toEqual([INIT_PATH, '--', '/bin/server', '--port', '8080']);
    expect(Object.values(c.process.capabilities).every((caps) => Array.isArray(caps) && caps.length === 0)).toBe(true);
    // The host's hard ceiling, whatever the setting asks for.
    expect(c.process.rlimits).toEqual([{ type: 'RLIMIT_NOFILE', hard: 20_000, soft: 20_000 }]);
    expect(c.root).toEqual({ path: spec.rootfs, readonly: true });
    expect(c.linux.cgroupsPath).toBe('/slipway/i-1');
    expect(c.linux.namespaces).toContainEqual({ type: 'network', path: '/run/netns/slipway-1' });
    expect(c.linux.resources).toMatchObject({
      memory: { limit: 256 * 1024 * 1024 },
      cpu: { quota: 50_000, period: 100_000 },
      pids: { limit: 512 },
    });
    expect(c.mounts.map((m: { destination: string }) => m.destination)).toEqual(
      expect.arrayContaining(['/proc', '/dev', '/tmp', '/etc/resolv.conf', INIT_PATH]),
    );
    expect(c.linux.seccomp).toEqual(ociSeccomp());
    expect(c.linux.seccomp.syscalls.some((s: { names: string[] }) => s.names.includes('unshare'))).toBe(true);
  });

  it(
    "masks what leaks the host (/sys/firmware, powercap's energy counters, /proc/kcore, …) and shows the init, " +
      'not a host path, as PID 1',
    () => {
      const c = ociConfig(spec) as any;
      expect(c.linux.maskedPaths).toEqual(
        expect.arrayContaining(['/sys/firmware', '/sys/devices/virtual/powercap', '/proc/kcore', '/proc/keys']),
      );
      expect(c.process.args[0]).toBe(INIT_PATH);
      expect(c.process.args.join(' ')).not.toContain('/data/');
    },
  );

  it('adds no init when the image brings one', () => {
    const c = ociConfig({ ...spec, init: null }) as any;
    expect(c.process.args).toEqual(spec.command);
    expect(c.mounts.some((m: { destination: string }) => m.destination === INIT_PATH)).toBe(false);
  });
});

describe('cleanToolError', () => {
  it("keeps skopeo's message and drops credentials from URLs", () => {
    const text =
      'time="2026-01-01T00:00:00Z" level=fatal msg="initializing source docker://u:secret@host/x: ' +
      'pinging container registry host: connection refused"';
    expect(cleanToolError(text)).toBe(
      'initializing source docker://host/x: pinging container registry host: connection refused',
    );
  });
});

describe('an image command that can never start', () => {
  it("is named from the init's or runc's words in the log, and nothing else is", () => {
    const cmd = ['/bin/server', '--port'];
    expect(
      containerStartFailure(
        ['--- slipway: starting ---', 'ERROR (catatonit:6): failed to exec pid1: No such file or directory'],
        cmd,
      ),
    ).toBe("The image's command cannot start: /bin/server: no such file or directory.");
    expect(containerStartFailure(['exec /bin/server: exec format error'], cmd)).toMatch(
      /^The image's command cannot start: \/bin\/server: exec format error \(a binary for another architecture/,
    );
    expect(
      containerStartFailure(
        [
          'time="x" level=error msg="runc run failed: unable to start container process: exec: \\"/bin/server\\": permission denied"',
        ],
        cmd,
      ),
    ).toBe("The image's command cannot start: /bin/server: permission denied.");
    expect(
      containerStartFailure(
        ['listening on 8080', 'panic: exec of a child failed: no such file or directory here'],
        cmd,
      ),
    ).toBeNull();
  });

  it('is found in the unpacked root, its links followed inside it (never on the host)', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'slipway-rootfs-'));
    dirs.push(root);
    mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
    symlinkSync('usr/bin', path.join(root, 'bin'));
    writeFileSync(path.join(root, 'usr/bin/server'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    // An absolute link means the image's /bin/sh, which this image lacks, whatever the host has.
    symlinkSync('/bin/sh', path.join(root, 'usr/bin/sh'));
    writeFileSync(path.join(root, 'usr/bin/data'), 'plain', { mode: 0o644 });
    expect(await resolveInRoot(root, '/bin/server')).toBe(path.join(root, 'usr/bin/server'));
    expect(await resolveInRoot(root, '/../../bin/../bin/server')).toBe(path.join(root, 'usr/bin/server'));
    expect(await resolveInRoot(root, '/bin/sh')).toBeNull();
    const config = (command: string[]) => ({
      command,
      env: { PATH: '/bin' },
      workingDir: '/',
      hasInit: false,
      user: null,
    });
    await expect(checkEntrypoint(root, config(['/bin/server']))).rejects.toThrow(
      "The image's command cannot start: /bin/server: its interpreter /bin/sh does not exist in the image.",
    );
    await expect(checkEntrypoint(root, config(['data']))).rejects.toThrow('data: permission denied (no execute bit)');
    await expect(checkEntrypoint(root, config(['nothing']))).rejects.toThrow('nothing: no such file or directory');
    writeFileSync(path.join(root, 'usr/bin/sh'.replace('sh', 'busybox')), readFileSync('/bin/busybox'), {
      mode: 0o755,
    });
    await expect(checkEntrypoint(root, config(['busybox']))).resolves.toBeUndefined();
    await expect(checkEntrypoint(root, { ...config(['busybox']), workingDir: '/app' })).rejects.toThrow(
      "The image's WorkingDir /app is not a directory",
    );
  });
});
