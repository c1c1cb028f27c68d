import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_INPUTS, CONSOLE_STAMP, consoleIsStale, ensureConsole } from '../../infra/scripts/console.mjs';

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
