import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopGroup } from '../support/app-processes.js';
import { freePort } from '../support/code-deploy-stand.js';
import { serviceEnv } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * `npm start` (infra/scripts/start.mjs), run as a user runs it, on this test's own database,
 * Redis prefix and port: once the api listens it prints where the console is, and that address
 * leads to the console.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
}, 60_000);

afterAll(async () => {
  await api?.close();
});

describe('npm start', () => {
  it('prints the console’s URL once the api listens, and the URL serves the console', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['infra/scripts/start.mjs'], {
      cwd: ROOT,
      env: serviceEnv(api, { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no console line in 120 s:\n${stderr.slice(-2000)}`)), 120_000);
        const check = () => {
          const found = /^\[slipway\] console: (\S+)/m.exec(stderr);
          if (found) clearTimeout(timer), resolve(found[1]!);
        };
        child.stderr.on('data', check);
        child.once('exit', (code) => reject(new Error(`start.mjs exited (${code}):\n${stderr.slice(-2000)}`)));
      });
      expect(line).toBe(`http://127.0.0.1:${port}/`);
      // Printed after the api said it listens, and its own log still comes through.
      expect(stdout).toContain('api listening');
      const res = await fetch(line, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('/console/');
      const page = await fetch(new URL('/console/', line));
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>Slipway console</title>');
    } finally {
      await stopGroup(child);
    }
  }, 180_000);
});
