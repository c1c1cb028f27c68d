import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertRealDirectory, BuildStepTampered, builderModulesDir, unsandboxedJail } from './build-sandbox.js';
import { buildEnv } from './build-steps.js';

const root = mkdtempSync(path.join(tmpdir(), 'slipway-build-sandbox-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('buildEnv', () => {
  it('is built from scratch: secrets, then what the builder sets, which wins; reserved names never pass', () => {
    const env = buildEnv({ home: '/srv/build/home', npmCache: '/srv/npm-cache' }, [
      { name: 'TOKEN', value: 't' },
      { name: 'CI', value: 'false' },
      { name: 'npm_config_cache', value: '/elsewhere' },
      { name: 'LD_PRELOAD', value: '/srv/build/evil.so' },
      { name: 'NODE_OPTIONS', value: '--require /srv/build/evil.js' },
    ]);
    expect(env).toEqual({
      TOKEN: 't',
      CI: 'true',
      LANG: 'C.UTF-8',
      npm_config_cache: '/srv/npm-cache',
      npm_config_update_notifier: 'false',
      PATH: expect.stringMatching(/^[^:]+:\/usr\/local\/sbin:\/usr\/local\/bin:\/usr\/sbin:\/usr\/bin:\/sbin:\/bin$/),
      HOME: '/srv/build/home',
      TMPDIR: '/tmp',
    });
    expect(env).not.toHaveProperty('DATABASE_URL');
  });

  it('puts the graph config env lowest and drops its loader variables too', () => {
    const env = buildEnv({ home: '/h', npmCache: '/c' }, [{ name: 'A', value: 'secret' }], {
      A: 'graph',
      B: 'graph',
      LD_PRELOAD: '/data/builds/x/source/evil.so',
      GLIBC_TUNABLES: 'x',
      HOME: '/elsewhere',
    });
    expect(env).toMatchObject({ A: 'secret', B: 'graph', HOME: '/h' });
    expect(env).not.toHaveProperty('LD_PRELOAD');
    expect(env).not.toHaveProperty('GLIBC_TUNABLES');
  });
});

describe('unsandboxedJail', () => {
  it('runs the shell in place, as this user, with the outside paths', () => {
    const jail = unsandboxedJail({ home: '/d/home', npmCache: '/d/cache' });
    expect(jail.uid).toBeNull();
    expect(jail.inside('/d/source/app')).toBe('/d/source/app');
    expect(jail.launch('npm ci', '/d/source/app')).toEqual({
      command: '/bin/sh',
      args: ['-c', 'npm ci'],
      cwd: '/d/source/app',
    });
  });
});

describe('assertRealDirectory', () => {
  it('accepts a real directory and refuses one a step replaced with a link, or a link on the way', async () => {
    const work = path.join(root, 'work');
    mkdirSync(path.join(work, 'source', 'app'), { recursive: true });
    await expect(assertRealDirectory(path.join(work, 'source', 'app'), work)).resolves.toBeUndefined();
    symlinkSync('/etc', path.join(work, 'linked'));
    await expect(assertRealDirectory(path.join(work, 'linked'), work)).rejects.toBeInstanceOf(BuildStepTampered);
    symlinkSync(path.join(work, 'source'), path.join(work, 'via'));
    await expect(assertRealDirectory(path.join(work, 'via', 'app'), work)).rejects.toThrow(
      /'app' is no longer a real directory of the build/,
    );
    await expect(assertRealDirectory(path.join(work, 'missing'), work)).rejects.toBeInstanceOf(BuildStepTampered);
  });
});

describe('builderModulesDir', () => {
  it('is the outermost node_modules holding tsx', async () => {
    const dir = await builderModulesDir();
    expect(path.basename(dir)).toBe('node_modules');
    expect(dir.split(path.sep).filter((p) => p === 'node_modules')).toHaveLength(1);
  });
});
