import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';

/**
 * A redeploy whose lockfile did not change reuses the dependencies its deployment's last build
 * installed (the builder's DependencyCache), through the real api, builder (sandboxed when root)
 * and deployer. The app depends on a local tarball whose install script writes a random stamp:
 * a fresh install writes a new one, a reuse carries the old one over, and the app serves it.
 * Nothing is downloaded (a `file:` dependency), so the test needs no registry.
 */
const INSTALL = '$ npm ci --no-audit --no-fund';
const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-deps-'));
let stand: CodeDeployStand;

/** `vendor/stamp-<version>.tgz`: a package whose install script writes a random stamp.txt. */
function stampTarball(version: string): Buffer {
  const dir = path.join(scratch, `stamp-${version}`, 'package');
  mkdirSync(dir, { recursive: true });
  const postinstall = `node -e "require('fs').writeFileSync('stamp.txt', require('crypto').randomUUID())"`;
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'stamp', version, scripts: { postinstall } }));
  const file = path.join(scratch, `stamp-${version}.tgz`);
  execFileSync('tar', ['-czf', file, '-C', path.dirname(dir), 'package']);
  return readFileSync(file);
}

/** The app's files at `version` of the code and of the stamp dependency, with the lockfile npm makes for them. */
function appFiles(code: string, stampVersion: string): Record<string, string | Buffer> {
  const tarball = `vendor/stamp-${stampVersion}.tgz`;
  const pkg = {
    name: 'deps-app',
    version: '1.0.0',
    private: true,
    scripts: { start: 'node server.js' },
    dependencies: { stamp: `file:${tarball}` },
  };
  const dir = mkdtempSync(path.join(scratch, 'lock-'));
  mkdirSync(path.join(dir, 'vendor'));
  const tgz = stampTarball(stampVersion);
  writeFileSync(path.join(dir, tarball), tgz);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg));
  execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--offline'], {
    cwd: dir,
    stdio: 'ignore',
  });
  const lock = readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
  return {
    'package.json': JSON.stringify(pkg),
    'package-lock.json': lock,
    [tarball]: tgz,
    'server.js': `const fs = require('node:fs');
require('node:http').createServer((req, res) => {
  if (req.url === '/ok') return res.end('ok');
  res.end(JSON.stringify({ code: ${JSON.stringify(code)}, stamp: fs.readFileSync(require.resolve('stamp/stamp.txt'), 'utf8') }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`,
  };
}

/** Commits `files` (binary ones included) to repository `name`. */
function commit(name: string, files: Record<string, string | Buffer>): void {
  const text: Record<string, string> = {};
  for (const [file, content] of Object.entries(files)) if (typeof content === 'string') text[file] = content;
  const repo = path.join(stand.api.config.localReposRoot, name);
  for (const [file, content] of Object.entries(files)) {
    if (typeof content === 'string') continue;
    mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
    writeFileSync(path.join(repo, file), content);
  }
  stand.commit(name, text);
}

async function served(deploymentId: string): Promise<{ code: string; stamp: string }> {
  const { url } = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
  return (await fetch(url)).json() as Promise<{ code: string; stamp: string }>;
}

/** Rebuilds from the branch head; returns the revision once deployed and its build log. */
async function redeploy(deploymentId: string): Promise<{ log: string[] }> {
  const res = await stand.http.patch(`/v2/deployments/${deploymentId}`, {
    source_revision_config: { repo_ref: 'main' },
  });
  expect(res.status, res.text).toBe(200);
  const rev = await stand.untilDone(deploymentId, res.body.latest_revision_id);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  return { log: await stand.logLines(deploymentId, rev.id, 'build') };
}

beforeAll(async () => {
  stand = await startCodeDeployStand();
}, 120_000);

afterAll(async () => {
  await stand?.close();
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('dependencies reused across builds of one deployment', () => {
  let deploymentId: string;
  let first: { code: string; stamp: string };

  it('installs on the first build and keeps what it installed', async () => {
    commit('deps-app', appFiles('v1', '1.0.0'));
    const created = await stand.deploy('deps-app');
    deploymentId = created.deploymentId;
    const rev = await stand.untilDone(deploymentId, created.revisionId);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    const log = await stand.logLines(deploymentId, created.revisionId, 'build');
    expect(log).toContain(INSTALL);
    first = await served(deploymentId);
    expect(first.code).toBe('v1');
    expect(first.stamp).toMatch(/^[0-9a-f-]{36}$/);
  }, 300_000);

  it("a code-only change reuses them: no install ran, the first install's stamp is served by the new code", async () => {
    commit('deps-app', { 'server.js': appFiles('v2', '1.0.0')['server.js']! });
    const { log } = await redeploy(deploymentId);
    expect(log).not.toContain(INSTALL);
    expect(log.some((l) => l.startsWith('Reusing the dependencies installed for this package-lock.json'))).toBe(true);
    expect(await served(deploymentId)).toEqual({ code: 'v2', stamp: first.stamp });
  }, 300_000);

  it('a changed lockfile installs again', async () => {
    commit('deps-app', appFiles('v3', '1.0.1'));
    const { log } = await redeploy(deploymentId);
    expect(log).toContain(INSTALL);
    const now = await served(deploymentId);
    expect(now.code).toBe('v3');
    expect(now.stamp).not.toBe(first.stamp);
  }, 300_000);

  it("another deployment with the very same lockfile never gets this one's dependencies", async () => {
    commit('deps-other', appFiles('v1', '1.0.1'));
    const created = await stand.deploy('deps-other');
    const rev = await stand.untilDone(created.deploymentId, created.revisionId);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(await stand.logLines(created.deploymentId, created.revisionId, 'build')).toContain(INSTALL);
    expect((await served(created.deploymentId)).stamp).not.toBe((await served(deploymentId)).stamp);
  }, 300_000);
});
