import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildError } from './build-steps.js';
import { AgentServerHostInstall, installEnv } from './host-install.js';
import { CommandAbortedError } from './run-command.js';

/**
 * The builder's one install of the agent server's dependencies, with a real `npm install` of a
 * small host stand-in (one locked package from the npm registry, which the builds need anyway).
 */
const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-host-install-'));
const DEP = 'is-number';

/** A host's package files: package.json and the lockfile npm makes for it. */
function hostSource(name: string, dependencies: Record<string, string>): string {
  const dir = path.join(scratch, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', private: true, dependencies }),
  );
  execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: dir,
    stdio: 'ignore',
  });
  return dir;
}

const target = () => mkdtempSync(path.join(scratch, 'build-'));
const installed = (dir: string) => existsSync(path.join(dir, 'node_modules', DEP, 'package.json'));
const never = () => new AbortController().signal;
const entries = (root: string) => readdirSync(root).filter((n) => n !== 'npm-cache');

let source: string;

beforeAll(() => {
  source = hostSource('host-a', { [DEP]: '7.0.0' });
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('AgentServerHostInstall', () => {
  it('installs once, then copies the same tree into every build, across processes sharing the directory', async () => {
    const root = path.join(scratch, 'cache-once');
    const lines: string[] = [];
    const first = target();
    const made = await new AgentServerHostInstall({ root, source, deadlineMs: 120_000 }).copyInto(first, {
      signal: never(),
      onLine: (l) => lines.push(l),
    });
    expect(made.installed).toBe(true);
    expect(lines[0]).toBe('$ npm install --no-audit --no-fund --ignore-scripts');
    expect(installed(first)).toBe(true);
    expect(entries(root)).toEqual([made.key]);

    // Marked, so a copy is told apart from a fresh install; a new instance is a builder restarted.
    writeFileSync(path.join(root, made.key, 'node_modules', 'marker'), 'from the entry');
    const again: string[] = [];
    const second = target();
    const reused = await new AgentServerHostInstall({ root, source, deadlineMs: 120_000 }).copyInto(second, {
      signal: never(),
      onLine: (l) => again.push(l),
    });
    expect(reused).toEqual({ key: made.key, installed: false });
    expect(again).toEqual([]);
    expect(readFileSync(path.join(second, 'node_modules', 'marker'), 'utf8')).toBe('from the entry');
    // A copy, not links: what the deployment's uid may change is its own.
    expect(lstatSync(path.join(second, 'node_modules', DEP, 'package.json')).nlink).toBe(1);
  }, 120_000);

  it('links the entry into a build when asked: the same files, writable by their owner alone', async () => {
    const root = path.join(scratch, 'cache-linked');
    const host = new AgentServerHostInstall({ root, source, deadlineMs: 120_000 });
    const first = target();
    // With no umask npm writes files everyone may change: the install must clear those bits.
    const umask = process.umask(0);
    const made = await host
      .copyInto(first, { signal: never(), onLine: () => undefined, linked: true })
      .finally(() => process.umask(umask));
    const second = target();
    await host.copyInto(second, { signal: never(), onLine: () => undefined, linked: true });
    const file = (dir: string) => path.join(dir, 'node_modules', DEP, 'package.json');
    expect(lstatSync(file(first)).ino).toBe(lstatSync(file(path.join(root, made.key))).ino);
    expect(lstatSync(file(second)).ino).toBe(lstatSync(file(first)).ino);
    const writable = execFileSync('find', [path.join(root, made.key, 'node_modules'), '-perm', '/022'], {
      encoding: 'utf8',
    });
    expect(writable).toBe('');
  }, 120_000);

  it('runs one install for builds that need it at once; a build cancelled while waiting leaves it to the others', async () => {
    const root = path.join(scratch, 'cache-concurrent');
    const host = new AgentServerHostInstall({ root, source, deadlineMs: 120_000 });
    const dirs = [target(), target(), target()];
    const lines: string[][] = [[], [], []];
    const cancel = new AbortController();
    // The second build is cancelled at once: whichever of the three started the install.
    const calls = dirs.map((dir, i) =>
      host.copyInto(dir, { signal: i === 1 ? cancel.signal : never(), onLine: (l) => lines[i]!.push(l) }),
    );
    cancel.abort(new Error('build cancelled'));
    const [a, b, c] = await Promise.allSettled(calls);
    expect(b.status).toBe('rejected');
    expect((b as PromiseRejectedResult).reason).toBeInstanceOf(CommandAbortedError);
    expect(a.status).toBe('fulfilled');
    expect(c.status).toBe('fulfilled');
    // One install ran, for one of them; the other two waited for it.
    const ran = lines.filter((l) => l[0] === '$ npm install --no-audit --no-fund --ignore-scripts');
    const waited = lines.filter(
      (l) => l.length === 1 && l[0] === 'Another build is installing the agent server’s dependencies: waiting for it.',
    );
    expect([ran.length, waited.length]).toEqual([1, 2]);
    expect(installed(dirs[0]!) && installed(dirs[2]!)).toBe(true);
    expect(entries(root)).toHaveLength(1);
  }, 120_000);

  it("follows the builder's npm settings (a registry set there is used), and nothing else of its environment", async () => {
    const root = path.join(scratch, 'cache-env');
    const saved = { ...process.env };
    Object.assign(process.env, { npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0' });
    try {
      const failed = new AgentServerHostInstall({ root, source, deadlineMs: 120_000 }).copyInto(target(), {
        signal: never(),
        onLine: () => undefined,
      });
      await expect(failed).rejects.toThrow(/Installing the agent server's dependencies failed/);
    } finally {
      for (const name of ['npm_config_registry', 'npm_config_fetch_retries']) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
    const env = installEnv('/stage', '/cache', {
      HOME: '/nonexistent',
      DATABASE_URL: 'postgres://secret',
      SLIPWAY_SECRETS_KEY: 'key',
      NPM_CONFIG_REGISTRY: 'https://mirror.example/',
      HTTPS_PROXY: 'http://proxy:3128',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    });
    expect(Object.keys(env).sort()).toEqual(
      [
        'CI',
        'HOME',
        'HTTPS_PROXY',
        'LANG',
        'NODE_EXTRA_CA_CERTS',
        'NPM_CONFIG_REGISTRY',
        'PATH',
        'npm_config_cache',
        'npm_config_update_notifier',
      ].sort(),
    );
    expect(env.HOME).toBe('/stage/home');
    expect(env.npm_config_cache).toBe('/cache/npm-cache');
  }, 120_000);

  it('installs a changed host afresh and drops the old entry; a failed install leaves nothing and is tried again', async () => {
    const root = path.join(scratch, 'cache-change');
    const old = await new AgentServerHostInstall({ root, source, deadlineMs: 120_000 }).copyInto(target(), {
      signal: never(),
      onLine: () => undefined,
    });

    const broken = path.join(scratch, 'host-broken');
    mkdirSync(broken, { recursive: true });
    writeFileSync(
      path.join(broken, 'package.json'),
      JSON.stringify({ name: 'host-broken', version: '1.0.0', dependencies: { [DEP]: '999.0.0' } }),
    );
    writeFileSync(path.join(broken, 'package-lock.json'), '{}');
    const failing = new AgentServerHostInstall({ root, source: broken, deadlineMs: 120_000 });
    await expect(failing.copyInto(target(), { signal: never(), onLine: () => undefined })).rejects.toThrow(BuildError);
    await expect(failing.copyInto(target(), { signal: never(), onLine: () => undefined })).rejects.toThrow(
      /Installing the agent server's dependencies failed/,
    );
    // Neither a partial entry nor the loss of the working one.
    expect(entries(root)).toEqual([old.key]);

    const changed = hostSource('host-b', { [DEP]: '7.0.0', 'is-odd': '3.0.1' });
    const dir = target();
    const now = await new AgentServerHostInstall({ root, source: changed, deadlineMs: 120_000 }).copyInto(dir, {
      signal: never(),
      onLine: () => undefined,
    });
    expect(now.installed).toBe(true);
    expect(now.key).not.toBe(old.key);
    expect(existsSync(path.join(dir, 'node_modules', 'is-odd'))).toBe(true);
    expect(entries(root)).toEqual([now.key]);
  }, 180_000);

  it('replaces a node_modules link in the build without following it', async () => {
    const root = path.join(scratch, 'cache-link');
    const outside = mkdtempSync(path.join(scratch, 'outside-'));
    writeFileSync(path.join(outside, 'keep'), 'host file');
    const dir = target();
    symlinkSync(outside, path.join(dir, 'node_modules'));
    await new AgentServerHostInstall({ root, source, deadlineMs: 120_000 }).copyInto(dir, {
      signal: never(),
      onLine: () => undefined,
    });
    expect(lstatSync(path.join(dir, 'node_modules')).isDirectory()).toBe(true);
    expect(readdirSync(outside)).toEqual(['keep']);
  }, 120_000);
});
