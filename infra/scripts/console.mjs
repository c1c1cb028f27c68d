// The web console (services/console) is a static single-page app the api serves at /console.
// Its files are built, never committed: `pnpm build`, `npm start` and `npm test` build it when
// its inputs changed since the last build. Plain Node, no dependencies beyond the console's own.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, log, run } from './bootstrap.mjs';

export const CONSOLE_DIR = path.join(ROOT, 'services/console');
export const CONSOLE_DIST = path.join(CONSOLE_DIR, 'dist');
/**
 * What a build is made from: the console's own files, the workspace library it imports
 * (@slipway/domain), the lockfile (a dependency's version) and this script.
 */
export const CONSOLE_INPUTS = [
  'services/console/app',
  'services/console/vite.config.ts',
  'services/console/package.json',
  'services/console/tsconfig.json',
  'libs/domain/src',
  'libs/domain/package.json',
  'pnpm-lock.yaml',
  'infra/scripts/console.mjs',
];
/**
 * The inputs' hash, written into the build it was made from. A dotfile: the api's static
 * handler never serves those. Contents, not mtimes: a fresh clone, a restored cache or a copy
 * gives sources and build whatever times it likes, and a build older or newer than its sources
 * says nothing about whether it was made from them.
 */
export const CONSOLE_STAMP = '.sources-sha256';

/** The files under `rel` (a file or a folder) that a build reads: no dependencies, no tests. */
function files(root, rel, out) {
  const full = path.join(root, rel);
  if (!existsSync(full)) return out;
  if (!statSync(full).isDirectory()) {
    out.push(rel);
    return out;
  }
  for (const name of readdirSync(full)) {
    if (name !== 'node_modules' && !/\.test\.ts$/.test(name)) files(root, path.join(rel, name), out);
  }
  return out;
}

/** The hash of everything the console's build is made from, under `root` (the repository). */
export function consoleSourcesHash(root = ROOT) {
  const hash = createHash('sha256');
  for (const file of CONSOLE_INPUTS.flatMap((input) => files(root, input, [])).sort()) {
    hash.update(`${file.split(path.sep).join('/')}\0`);
    hash.update(readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** True when the build is missing or was not made from the sources as they are now. */
export function consoleIsStale(root = ROOT) {
  const dist = path.join(root, 'services/console/dist');
  if (!existsSync(path.join(dist, 'index.html')) || !existsSync(path.join(dist, CONSOLE_STAMP))) return true;
  return readFileSync(path.join(dist, CONSOLE_STAMP), 'utf8').trim() !== consoleSourcesHash(root);
}

/**
 * Type-checks and builds the console into services/console/dist. The build goes to a folder of
 * its own first and replaces dist/ in one rename, so an api serving the old build (a test
 * running meanwhile) never sees a half-written one. The inputs are hashed before the build
 * starts: a source edited while vite runs leaves a stamp that no longer matches, so the next
 * run builds again.
 */
export function buildConsole() {
  const hash = consoleSourcesHash();
  run('pnpm', ['exec', 'tsc', '--noEmit', '-p', 'tsconfig.json'], { cwd: CONSOLE_DIR });
  const fresh = `${CONSOLE_DIST}.${process.pid}.tmp`;
  const old = `${CONSOLE_DIST}.${process.pid}.old`;
  try {
    viteBuild(fresh);
    writeFileSync(path.join(fresh, CONSOLE_STAMP), `${hash}\n`);
    if (existsSync(CONSOLE_DIST)) renameSync(CONSOLE_DIST, old);
    renameSync(fresh, CONSOLE_DIST);
  } finally {
    rmSync(fresh, { recursive: true, force: true });
    rmSync(old, { recursive: true, force: true });
  }
  log(`built ${path.relative(ROOT, CONSOLE_DIST)}`);
}

/**
 * vite's build of the console into `outDir`, always with NODE_ENV=production: under any other
 * value (a vitest run has `test`) vite bundles React's development build, two thirds larger and
 * slower, which the stamp would then keep for `npm start` as current.
 */
export function viteBuild(outDir) {
  run('pnpm', ['exec', 'vite', 'build', '--logLevel', 'warn', '--outDir', outDir, '--emptyOutDir'], {
    cwd: CONSOLE_DIR,
    env: { ...process.env, NODE_ENV: 'production' },
  });
}

/** Builds the console unless its build was made from the current sources. */
export function ensureConsole() {
  if (consoleIsStale()) buildConsole();
}

if (import.meta.url === `file://${process.argv[1]}`) ensureConsole();
