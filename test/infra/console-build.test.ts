import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSOLE_INPUTS,
  CONSOLE_STAMP,
  consoleIsStale,
  ensureConsole,
  viteBuild,
} from '../../infra/scripts/console.mjs';

/**
 * Whether the console's build (infra/scripts/console.mjs) is current, judged on a copy of its
 * inputs and of the repository's build in which every file has the same time, as in a fresh
 * clone or a restored CI cache: times say nothing there, so only what the files hold counts.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHECKOUT = new Date('2026-01-01T00:00:00Z');
let copy: string;

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? allFiles(file) : [file];
  });
}

beforeAll(() => {
  ensureConsole();
  copy = mkdtempSync(path.join(tmpdir(), 'slipway-console-build-'));
  for (const input of [...CONSOLE_INPUTS, 'services/console/dist']) {
    cpSync(path.join(ROOT, input), path.join(copy, input), {
      recursive: true,
      filter: (src) => !src.split(path.sep).includes('node_modules'),
    });
  }
  for (const file of allFiles(copy)) utimesSync(file, CHECKOUT, CHECKOUT);
}, 120_000);

afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

describe('the console build’s freshness', () => {
  it('holds the hash of its inputs, so a build made from them is current whatever the files’ times', () => {
    expect(existsSync(path.join(copy, 'services/console/dist', CONSOLE_STAMP))).toBe(true);
    expect(consoleIsStale(copy)).toBe(false);
    // A source saved again unchanged, newer than the build: still current.
    const styles = path.join(copy, 'services/console/app/styles.css');
    utimesSync(styles, new Date(), new Date());
    expect(consoleIsStale(copy)).toBe(false);
  });

  it('is stale once an input changes, even when the change is no newer than the build', () => {
    const chart = path.join(copy, 'services/console/app/ui/metrics/Chart.tsx');
    appendFileSync(chart, '\n');
    utimesSync(chart, CHECKOUT, CHECKOUT);
    expect(consoleIsStale(copy)).toBe(true);
  });

  it('is stale without a stamp (a build no hash vouches for)', () => {
    rmSync(path.join(copy, 'services/console/dist', CONSOLE_STAMP));
    expect(consoleIsStale(copy)).toBe(true);
    writeFileSync(path.join(copy, 'services/console/dist', CONSOLE_STAMP), 'not a hash\n');
    expect(consoleIsStale(copy)).toBe(true);
  });
});

describe('the console build', () => {
  it('is React’s production build even when the building process has another NODE_ENV', () => {
    // A vitest run (this one) has NODE_ENV=test; so did the first build after a console edit
    // made by `pnpm exec vitest`, which npm start then served as current: 739 KB of React's
    // development build against 444 KB.
    expect(process.env.NODE_ENV).toBe('test');
    const out = path.join(copy, 'built-under-test');
    viteBuild(out);
    const scripts = readdirSync(path.join(out, 'assets')).filter((f) => f.endsWith('.js'));
    expect(scripts.length).toBeGreaterThan(0);
    const code = scripts.map((f) => readFileSync(path.join(out, 'assets', f), 'utf8')).join('\n');
    expect(code).toContain('createRoot');
    // A warning only React's development build carries.
    expect(code).not.toContain('is deprecated in plain JavaScript React classes');
  }, 120_000);
});
