// The web console (services/console) is a static single-page app the api serves at /console.
// Its files are built, never committed: `pnpm build`, `npm start` and `npm test` build it when
// its sources are newer than the last build. Plain Node, no dependencies beyond the console's own.
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT, log, run } from './bootstrap.mjs';

export const CONSOLE_DIR = path.join(ROOT, 'services/console');
export const CONSOLE_DIST = path.join(CONSOLE_DIR, 'dist');
const INPUTS = ['app', 'vite.config.ts', 'package.json', 'tsconfig.json'];

function newestMtime(file) {
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(file).map((name) => newestMtime(path.join(file, name))));
}

/** True when the build is missing or older than any of its sources. */
export function consoleIsStale() {
  const built = path.join(CONSOLE_DIST, 'index.html');
  if (!existsSync(built)) return true;
  const sources = Math.max(...INPUTS.map((name) => path.join(CONSOLE_DIR, name)).filter(existsSync).map(newestMtime));
  return sources > statSync(built).mtimeMs;
}

/**
 * Type-checks and builds the console into services/console/dist. The build goes to a folder of
 * its own first and replaces dist/ in one rename, so an api serving the old build (a test
 * running meanwhile) never sees a half-written one.
 */
export function buildConsole() {
  run('pnpm', ['exec', 'tsc', '--noEmit', '-p', 'tsconfig.json'], { cwd: CONSOLE_DIR });
  const fresh = `${CONSOLE_DIST}.${process.pid}.tmp`;
  const old = `${CONSOLE_DIST}.${process.pid}.old`;
  try {
    run('pnpm', ['exec', 'vite', 'build', '--logLevel', 'warn', '--outDir', fresh, '--emptyOutDir'], { cwd: CONSOLE_DIR });
    if (existsSync(CONSOLE_DIST)) renameSync(CONSOLE_DIST, old);
    renameSync(fresh, CONSOLE_DIST);
  } finally {
    rmSync(fresh, { recursive: true, force: true });
    rmSync(old, { recursive: true, force: true });
  }
  log(`built ${path.relative(ROOT, CONSOLE_DIST)}`);
}

/** Builds the console unless its build is current. */
export function ensureConsole() {
  if (consoleIsStale()) buildConsole();
}

if (import.meta.url === `file://${process.argv[1]}`) ensureConsole();
