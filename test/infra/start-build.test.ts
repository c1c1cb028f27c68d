import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopGroup } from '../support/app-processes.js';
import { freePort } from '../support/code-deploy-stand.js';
import { serviceEnv } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * `npm start` (infra/scripts/start.mjs) on a fresh copy of the repository (its tracked and new
 * files, no node_modules, no build: start.mjs installs the dependencies itself), on this test's
 * own database, Redis prefix and port, with production's defaults (no NODE_ENV given). The first
 * start compiles the services and runs `node dist/start.js`; the second finds the build current,
 * says so and leaves dist/ alone; a changed source is built again. The console's build (its own
 * hash stamp, infra/scripts/console.mjs) is copied along to save the test a vite build.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILT = [
  'services/api/dist/start.js',
  'services/builder/dist/start.js',
  'services/deployer/dist/start.js',
  'services/cli/dist/start.js',
];
let api: TestApi;
let copy: string;

beforeAll(async () => {
  api = await startTestApi();
  copy = mkdtempSync(path.join(tmpdir(), 'slipway-start-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  }).split('\0');
  for (const file of files.filter(Boolean)) {
    if (!existsSync(path.join(ROOT, file))) continue;
    mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    cpSync(path.join(ROOT, file), path.join(copy, file), { preserveTimestamps: true });
  }
  execFileSync(process.execPath, ['infra/scripts/console.mjs'], { cwd: ROOT, stdio: 'ignore' });
  cpSync(path.join(ROOT, 'services/console/dist'), path.join(copy, 'services/console/dist'), {
    recursive: true,
    preserveTimestamps: true,
  });
}, 240_000);

afterAll(async () => {
  await api?.close();
  if (copy) rmSync(copy, { recursive: true, force: true });
});

/** Runs `npm start`'s script in the copy until it says it started, then stops it; returns what it printed. */
async function startOnce(): Promise<string> {
  const port = await freePort();
  const env = serviceEnv(api, {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SLIPWAY_REGISTRY: 'off',
    SLIPWAY_SANDBOX: 'off',
  });
  delete (env as Record<string, string | undefined>).NODE_ENV;
  const child = spawn(process.execPath, ['infra/scripts/start.mjs'], {
    cwd: copy,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not started in 180 s:\n${output.slice(-3000)}`)), 180_000);
      child.stderr.on('data', () => /\[slipway\] started in/.test(output) && (clearTimeout(timer), resolve()));
      child.once(
        'exit',
        (code) => (clearTimeout(timer), reject(new Error(`start.mjs exited (${code}):\n${output.slice(-3000)}`))),
      );
    });
    expect(output).toContain(`[slipway] started in`);
    expect(output).toMatch(
      new RegExp(
        `compiled, NODE_ENV=production\\): API http://127\\.0\\.0\\.1:${port}/v2, console http://127\\.0\\.0\\.1:${port}/`,
      ),
    );
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    return output;
  } finally {
    await stopGroup(child);
  }
}

const mtimes = () => BUILT.map((file) => statSync(path.join(copy, file)).mtimeMs);

describe('npm start on a fresh copy', () => {
  it('builds once, skips the build while sources are unchanged, and builds again after a change', async () => {
    const first = await startOnce();
    expect(first).toContain('[slipway] built the services in');
    expect(first).not.toContain('skipping it');
    const built = mtimes();

    const second = await startOnce();
    expect(second).toContain('[slipway] build is current (sources unchanged since the last build): skipping it');
    expect(second).not.toContain('[slipway] built the services');
    expect(mtimes()).toEqual(built);

    appendFileSync(path.join(copy, 'libs/domain/src/status.ts'), '\n// a change\n');
    const third = await startOnce();
    expect(third).toContain('[slipway] built the services in');
    expect(mtimes().every((mtime, i) => mtime > built[i]!)).toBe(true);
  }, 600_000);
});
