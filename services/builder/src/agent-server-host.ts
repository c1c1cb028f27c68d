import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ArtifactManifest } from '@slipway/domain';

/**
 * The agent server host (services/agent-server: a TypeScript program and its locked
 * dependencies) that serves a LangGraph.js project's graphs. It is copied into the artifact,
 * compiled, so an instance needs nothing outside its artifact directory. Found relative to this
 * module: the packaged service (`pnpm build --package`, the image) carries it as
 * `agent-server-host/` beside `dist/`; in the source tree (services/builder/src, or a build in
 * services/builder/dist) it is the library's.
 */
const PACKAGED_HOST = fileURLToPath(new URL('../agent-server-host/', import.meta.url));
export const AGENT_SERVER_HOST_SOURCE = existsSync(PACKAGED_HOST)
  ? PACKAGED_HOST
  : fileURLToPath(new URL('../../agent-server/', import.meta.url));

/** Where the host goes in the source tree (and so in the artifact's app/). */
export const AGENT_SERVER_HOST_DIR = '.slipway-agent-server';

/** The host's entry point inside its copy: `src/server.ts`, compiled. */
export const AGENT_SERVER_HOST_ENTRY = 'dist/server.js';

/** Its install: exactly the locked versions (the host's .npmrc sets how peers are handled). */
export const AGENT_SERVER_HOST_INSTALL = 'npm install --no-audit --no-fund --ignore-scripts';

/**
 * Copies the host into `<sourceRoot>/.slipway-agent-server` (its package files, not its
 * node_modules) with its sources compiled to `dist/`; returns that directory.
 */
export async function copyAgentServerHost(sourceRoot: string): Promise<string> {
  const target = path.join(sourceRoot, AGENT_SERVER_HOST_DIR);
  // Whatever the source (or a step) put under that name goes first: a link there would make
  // this copy, done by the builder itself, land outside the build.
  await rm(target, { recursive: true, force: true });
  const skipped = new Set(['node_modules', 'src', 'dist']);
  await cp(AGENT_SERVER_HOST_SOURCE, target, {
    recursive: true,
    filter: (src) =>
      !path
        .relative(AGENT_SERVER_HOST_SOURCE, src)
        .split(path.sep)
        .some((part) => skipped.has(part)),
  });
  await compileAgentServerHost(path.join(AGENT_SERVER_HOST_SOURCE, 'src'), path.join(target, 'dist'));
  return target;
}

/**
 * Each module of the host's `src/` to an ES module of the same name in `outDir`: a transpile
 * only, no bundle (its dependencies are installed beside it, and the graph-loading hooks must be
 * registered before the published server is first imported). Types are checked where the code
 * is written (`pnpm typecheck:agent-server`, test/infra/agent-server-host.test.ts), not here.
 */
export async function compileAgentServerHost(srcDir: string, outDir: string): Promise<void> {
  const { transform } = await import('esbuild');
  await mkdir(outDir, { recursive: true });
  const modules = (await readdir(srcDir)).filter(
    (f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.test.ts'),
  );
  await Promise.all(
    modules.map(async (file) => {
      const source = await readFile(path.join(srcDir, file), 'utf8');
      const { code } = await transform(source, { loader: 'ts', format: 'esm', target: 'node20', sourcefile: file });
      await writeFile(path.join(outDir, file.replace(/\.ts$/, '.js')), code);
    }),
  );
}

/** The start command of an agent-server artifact: the host, given the graph config file, in its directory. */
export function agentServerStart(
  appDir: string,
  hostDir: string,
  graphConfigFile: string,
  cwd: string,
): ArtifactManifest['start'] {
  return {
    command: 'node',
    args: [path.relative(appDir, path.join(hostDir, AGENT_SERVER_HOST_ENTRY)), path.basename(graphConfigFile)],
    cwd,
  };
}
