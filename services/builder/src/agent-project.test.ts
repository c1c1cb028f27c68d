import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkNodeVersion, detectProjectKind } from './agent-project.js';
import { BuildError, type PackageInfo } from './build-steps.js';
import { findLockfile, lockfileInstallCommand, runScriptCommand } from './package-manager.js';

const pkg = (over: Partial<PackageInfo> = {}): PackageInfo => ({
  scripts: {},
  packageManager: null,
  lockfile: null,
  ...over,
});

describe('detectProjectKind', () => {
  it('keeps a project with a start script a server of its own, whatever its graphs say', () => {
    expect(
      detectProjectKind(
        { graphs: { agent: './server.js:graph' } },
        pkg({ scripts: { start: 'node server.js' } }),
        'the source root',
      ),
    ).toBe('server');
  });

  it('serves JS and TS graphs of a project without a start script', () => {
    for (const file of ['a.ts', 'a.mts', 'a.js', 'a.mjs']) {
      expect(detectProjectKind({ graphs: { agent: `./src/${file}:graph` } }, pkg(), 'the source root')).toBe(
        'agent-server',
      );
    }
  });

  it('refuses a Python graph saying Python agent servers are not available and what they would need', () => {
    const run = () => detectProjectKind({ graphs: { agent: './agent.py:graph' } }, null, 'the source root');
    expect(run).toThrow(BuildError);
    expect(run).toThrow(
      /^Graph 'agent' \(\.\/agent\.py:graph\) is a Python graph, and Python agent servers are not available in this installation/,
    );
    expect(run).toThrow(/would need a Python runtime/);
  });

  it('refuses a graph file of another language, naming it', () => {
    expect(() => detectProjectKind({ graphs: { g: './g.rb:graph' } }, pkg(), 'x')).toThrow(
      /^Graph 'g' \(\.\/g\.rb:graph\) is not a JavaScript or TypeScript file/,
    );
  });

  it('serves a plain app (no graph config file, so no graphs) by its start script', () => {
    expect(detectProjectKind({ graphs: {} }, pkg({ scripts: { start: 'node server.js' } }), 'the source root')).toBe(
      'server',
    );
  });

  it('says what to add when there are neither graphs nor a start script', () => {
    expect(() => detectProjectKind({ graphs: {} }, pkg(), 'the source root')).toThrow(
      new RegExp(
        '^Nothing to serve in the source root: there is no graph config file \\(langgraph\\.json\\) ' +
          'and package\\.json has no "start" script\\. Add a "start" script',
      ),
    );
    expect(() => detectProjectKind({ graphs: {} }, null, "'apps/web'")).toThrow(
      /^Nothing to serve in 'apps\/web': there is no graph config file \(langgraph\.json\) and no package\.json\./,
    );
  });

  it('asks for a package.json when a JS graph project has none', () => {
    expect(() => detectProjectKind({ graphs: { agent: './a.ts:graph' } }, null, 'the source root')).toThrow(
      /^No package\.json in the source root: a LangGraph\.js project needs one/,
    );
  });
});

describe('checkNodeVersion', () => {
  it('accepts the running major or nothing at all', () => {
    expect(() => checkNodeVersion('20', '20.19.1')).not.toThrow();
    expect(() => checkNodeVersion(null, '20.19.1')).not.toThrow();
  });

  it('fails clearly when the requested major is not the one available', () => {
    expect(() => checkNodeVersion('22', '20.19.1')).toThrow(
      /^The graph config asks for node_version "22", but this installation runs Node\.js 20\.19\.1 \(major 20\): set "node_version": "20"/,
    );
  });
});

describe('package manager detection', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-pm-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the lockfile and installs with it frozen', async () => {
    expect(await findLockfile(dir)).toBeNull();
    expect(lockfileInstallCommand(pkg())).toBe('npm install --no-audit --no-fund');
    writeFileSync(path.join(dir, 'package-lock.json'), '{}');
    expect(lockfileInstallCommand(pkg({ lockfile: await findLockfile(dir) }))).toBe('npm ci --no-audit --no-fund');
    writeFileSync(path.join(dir, 'pnpm-lock.yaml'), '');
    const lockfile = await findLockfile(dir);
    expect(lockfile).toEqual({ file: 'pnpm-lock.yaml', manager: 'pnpm' });
    expect(lockfileInstallCommand(pkg({ lockfile }))).toBe('pnpm install --frozen-lockfile');
    expect(runScriptCommand(pkg({ lockfile }), 'build')).toBe('pnpm run build');
  });

  it('follows packageManager over the lockfile, yarn classic and berry alike', () => {
    const yarnLock = { file: 'yarn.lock', manager: 'yarn' as const };
    expect(lockfileInstallCommand(pkg({ lockfile: yarnLock }))).toBe('yarn install --frozen-lockfile');
    expect(lockfileInstallCommand(pkg({ lockfile: yarnLock, packageManager: 'yarn@4.5.0' }))).toBe(
      'yarn install --immutable',
    );
    expect(lockfileInstallCommand(pkg({ packageManager: 'pnpm@9.1.0' }))).toBe('pnpm install');
  });
});
