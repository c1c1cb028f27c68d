// `pnpm build`: compiles every service's entry file to `services/<name>/dist/main.js`, so that
// production runs plain `node dist/main.js` (no TypeScript loader at run time), and builds the
// web console the api serves (services/console/dist).
// `pnpm build --package <dir> [service…]` also lays each service out for production in
// `<dir>/<service>`: its bundle plus its production dependencies only (`pnpm deploy --prod`).
// The Dockerfile runs exactly this, and test/infra/production-build.test.ts boots the result.
//
// esbuild bundles our own workspace libraries into each service and leaves every npm package
// external. Class names are kept (TypeORM and error classes rely on them); decorators compile as
// TypeScript's legacy decorators (tsconfig `experimentalDecorators`). Every column type is
// explicit, so no decorator metadata is needed (esbuild emits none).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { ROOT, log } from './bootstrap.mjs';
import { CONSOLE_DIST, ensureConsole } from './console.mjs';

/**
 * Every service of the workspace with an entry file: services/<name>/src/main.ts. The agent server
 * host (services/agent-server) is not one: it is built inside each agent artifact by the builder.
 */
export function serviceNames() {
  const dir = path.join(ROOT, 'services');
  return readdirSync(dir)
    .filter((name) => existsSync(path.join(dir, name, 'src/main.ts')) && name !== AGENT_SERVER_HOST)
    .sort();
}

/** services/<this>: the agent server host, copied beside the builder's bundle. */
const AGENT_SERVER_HOST = 'agent-server';

/**
 * Workspace packages are bundled; anything resolved from npm stays an import. In a package it is
 * the bare name (its node_modules is flat). `inWorkspace` (what `npm start` runs in place) writes
 * the file the workspace resolves it to instead: pnpm gives each package only its own
 * dependencies, and the bundle imports those of every library it inlines.
 */
function externalNpmPackages(inWorkspace) {
  return {
    name: 'external-npm-packages',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.path.startsWith('@slipway/') || args.pluginData?.inner) return undefined;
        if (!inWorkspace) return { path: args.path, external: true };
        const found = await b.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: { inner: true },
        });
        return { path: found.errors.length || found.external ? args.path : found.path, external: true };
      });
    },
  };
}

/** Bundles `services/<name>/src/main.ts` into `services/<name>/dist/main.js`. */
export function buildService(name) {
  return buildEntry(`services/${name}/src/main.ts`, `services/${name}/dist/main.js`);
}

/** Bundles one entry file (relative to the repository) into `out`. */
export async function buildEntry(entry, out, { inWorkspace = false } = {}) {
  const outfile = path.join(ROOT, out);
  await build({
    entryPoints: [path.join(ROOT, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    keepNames: true,
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    plugins: [externalNpmPackages(inWorkspace)],
    logLevel: 'warning',
    // An ESM bundle has no `require`; bundled CommonJS-style code may still call it.
    banner: {
      js: "import { createRequire as __slipwayRequire } from 'node:module'; const require = __slipwayRequire(import.meta.url);",
    },
  });
  log(`built ${path.relative(ROOT, outfile)}`);
  return outfile;
}

/**
 * `<outDir>/<name>`: package.json, dist/ and a flat node_modules of production dependencies
 * (hoisted, because the bundle imports the npm dependencies of the libraries it inlines).
 * Sources are left out: production never reads them.
 */
export function packageService(name, outDir) {
  const target = path.join(outDir, name);
  rmSync(target, { recursive: true, force: true });
  const result = spawnSync(
    'pnpm',
    [
      '--filter',
      `@slipway/${name}`,
      'deploy',
      '--prod',
      '--legacy',
      '--config.node-linker=hoisted',
      '--prefer-offline',
      target,
    ],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`pnpm deploy of ${name} exited with ${result.status}`);
  rmSync(path.join(target, 'src'), { recursive: true, force: true });
  cpSync(path.join(ROOT, 'services', name, 'dist'), path.join(target, 'dist'), { recursive: true });
  // The api serves the console from `console/` beside its bundle (services/api/src/console).
  if (name === 'api') cpSync(CONSOLE_DIST, path.join(target, 'console'), { recursive: true });
  // The builder copies the agent server host into LangGraph.js artifacts from `agent-server-host/`
  // beside its bundle (services/builder/src/agent-server-host.ts); the builder installs its
  // dependencies once, at its first agent build (services/builder/src/host-install.ts).
  if (name === 'builder') {
    cpSync(path.join(ROOT, 'services/agent-server'), path.join(target, 'agent-server-host'), {
      recursive: true,
      filter: (src) => !src.split(path.sep).includes('node_modules'),
    });
  }
  log(`packaged ${name} into ${target}`);
  return target;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--package');
  const outDir = at >= 0 ? path.resolve(args.splice(at, 2)[1] ?? '') : null;
  const names = args.length ? args : serviceNames();
  for (const name of names) await buildService(name);
  if (names.includes('api')) ensureConsole();
  if (outDir) for (const name of names) packageService(name, outDir);
}
