// What `npm start` runs is compiled, as in production (`node dist/…`): this builds the
// entries it runs once, and again only when their inputs changed. The inputs are hashed (every
// source file of the workspace libraries and services, their package.json files, tsconfig.json,
// the lockfile and the build script); the hash of the last build is kept beside the dependencies
// (node_modules/.slipway-build) with a hash of each output, so a fresh install, a changed source
// or outputs overwritten by `pnpm build` rebuild, and a second start does not. Plain Node apart from esbuild (build.mjs).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, log } from './bootstrap.mjs';
import { buildEntry } from './build.mjs';

/**
 * The entries `npm start` runs, source and compiled. Compiled beside `pnpm build`'s
 * `dist/main.js` (same folder, so paths relative to the bundle hold), under a name of its own:
 * `pnpm build` writes main.js with bare npm imports for a production package, and the two may run
 * at once (tests do) without one overwriting what the other is about to run.
 */
const entry = (dir) => ({ source: `${dir}/src/main.ts`, built: `${dir}/dist/start.js` });
export const START_ENTRIES = {
  cli: entry('services/cli'),
  api: entry('services/api'),
  builder: entry('services/builder'),
  deployer: entry('services/deployer'),
  edge: entry('services/edge'),
  registry: entry('services/registry'),
};

export const STAMP = path.join(ROOT, 'node_modules/.slipway-build');
/** Folders of services/ and libs/ that are not sources of the compiled entries (the console has its own build: console.mjs). */
const SKIP_NAMES = new Set(['node_modules', 'dist']);
const SKIP_PATHS = new Set(['services/console', 'services/agent-server']);
const SINGLE_INPUTS = ['tsconfig.json', 'pnpm-lock.yaml', 'infra/scripts/build.mjs', 'infra/scripts/start-build.mjs'];

function sourceFiles(dir, out) {
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_NAMES.has(entry.name) && !SKIP_PATHS.has(rel) && !entry.name.startsWith('.')) sourceFiles(rel, out);
    } else if (/\.(ts|mts|js|mjs|json)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) {
      out.push(rel);
    }
  }
  return out;
}

/** The hash of everything the compiled entries are made from. */
export function sourcesHash() {
  const files = [...sourceFiles('libs', []), ...sourceFiles('services', []), ...SINGLE_INPUTS].sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(ROOT, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** What the last build made: the inputs' hash and each output's (`pnpm build` writes the same files for packaging). */
function stampOf(hash) {
  const outputs = Object.values(START_ENTRIES).map(({ built }) => {
    const file = path.join(ROOT, built);
    return existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : 'missing';
  });
  return JSON.stringify({ sources: hash, outputs });
}

/** Builds the entries unless the last build was made from the same inputs and is still there as it was made. */
export async function ensureStartBuild() {
  const hash = sourcesHash();
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === stampOf(hash)) {
    log('build is current (sources unchanged since the last build): skipping it');
    return false;
  }
  const started = performance.now();
  for (const { source, built } of Object.values(START_ENTRIES)) await buildEntry(source, built, { inWorkspace: true });
  writeFileSync(STAMP, stampOf(hash));
  log(`built the services in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return true;
}
