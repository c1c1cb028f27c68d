import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DependencyCache } from './dependency-cache.js';

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-depcache-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An app directory with package.json, optionally a lockfile and an installed node_modules/dep/index.js. */
function app(files: Record<string, string>, installed?: string): string {
  const dir = scratch();
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  if (installed !== undefined) {
    mkdirSync(path.join(dir, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(path.join(dir, 'node_modules', 'dep', 'index.js'), installed);
  }
  return dir;
}

const PKG = JSON.stringify({ name: 'a', dependencies: { dep: '1.0.0' } });
const LOCK = JSON.stringify({ lockfileVersion: 3, packages: { 'node_modules/dep': { version: '1.0.0' } } });

describe('DependencyCache', () => {
  it('keys an install by its lockfile, package.json and command; none without a lockfile or with own install scripts', async () => {
    const a = await DependencyCache.keyOf(app({ 'package.json': PKG, 'package-lock.json': LOCK }), 'npm ci');
    const same = await DependencyCache.keyOf(
      app({ 'package.json': PKG, 'package-lock.json': LOCK, 'agent.ts': 'changed code' }),
      'npm ci',
    );
    const otherLock = await DependencyCache.keyOf(
      app({ 'package.json': PKG, 'package-lock.json': LOCK.replace('1.0.0', '1.0.1') }),
      'npm ci',
    );
    const otherCommand = await DependencyCache.keyOf(
      app({ 'package.json': PKG, 'package-lock.json': LOCK }),
      'npm ci --omit=dev',
    );
    expect(a.key).toMatch(/^[0-9a-f]{64}$/);
    expect(same.key).toBe(a.key);
    expect(otherLock.key).not.toBe(a.key);
    expect(otherCommand.key).not.toBe(a.key);
    expect(await DependencyCache.keyOf(app({ 'package.json': PKG }), 'npm install')).toEqual({
      key: null,
      reason: 'no lockfile',
    });
    const scripted = JSON.stringify({ name: 'a', scripts: { postinstall: 'prisma generate' } });
    expect(
      (await DependencyCache.keyOf(app({ 'package.json': scripted, 'package-lock.json': LOCK }), 'npm ci')).key,
    ).toBeNull();
  });

  it('restores what was saved under the key, and only for that key', async () => {
    const cache = new DependencyCache(path.join(scratch(), 'deps'));
    await cache.save('k1', app({}, 'installed once'));
    const next = app({}, 'stale tree of the source');
    expect(await cache.restore('k1', next)).toBe(true);
    expect(readFileSync(path.join(next, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe('installed once');
    expect(await cache.restore('k2', app({}))).toBe(false);
    await cache.keepOnly(new Set(['k2']));
    expect(await cache.restore('k1', app({}))).toBe(false);
  });

  it('never follows a node_modules link: not when saving, not when restoring over one', async () => {
    const outside = scratch();
    writeFileSync(path.join(outside, 'secret'), 'host file');
    const cache = new DependencyCache(path.join(scratch(), 'deps'));
    const linked = app({});
    symlinkSync(outside, path.join(linked, 'node_modules'));
    await cache.save('k', linked);
    expect(await cache.restore('k', app({}))).toBe(false);

    await cache.save('k2', app({}, 'real'));
    const target = app({});
    symlinkSync(outside, path.join(target, 'node_modules'));
    expect(await cache.restore('k2', target)).toBe(true);
    expect(readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('host file');
    expect(existsSync(path.join(outside, 'dep'))).toBe(false);
    expect(readFileSync(path.join(target, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe('real');
  });
});
