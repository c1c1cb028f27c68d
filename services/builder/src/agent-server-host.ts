import { existsSync } from 'node:fs';
import { cp, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ArtifactManifest } from '@slipway/domain';

/**
 * The agent server host (libs/agent-server/host: a program and its locked dependencies) that
 * serves a LangGraph.js project's graphs. It is copied into the artifact, so an instance needs
 * nothing outside its artifact directory. Found relative to this module: the packaged service
 * (`pnpm build --package`, the image) carries it as `agent-server-host/` beside `dist/`; in the
 * source tree (services/builder/src, or a build in services/builder/dist) it is the library's.
 */
const PACKAGED_HOST = fileURLToPath(new URL('../agent-server-host/', import.meta.url));
export const AGENT_SERVER_HOST_SOURCE = existsSync(PACKAGED_HOST) ? PACKAGED_HOST : fileURLToPath(new URL('../../../libs/agent-server/host/', import.meta.url));

/** Where the host goes in the source tree (and so in the artifact's app/). */
export const AGENT_SERVER_HOST_DIR = '.slipway-agent-server';

/** Its install: exactly the locked versions (the host's .npmrc sets how peers are handled). */
export const AGENT_SERVER_HOST_INSTALL = 'npm install --no-audit --no-fund --ignore-scripts';

/** Copies the host (not its node_modules) into `<sourceRoot>/.slipway-agent-server`; returns that directory. */
export async function copyAgentServerHost(sourceRoot: string): Promise<string> {
  const target = path.join(sourceRoot, AGENT_SERVER_HOST_DIR);
  // Whatever the source (or a step) put under that name goes first: a link there would make
  // this copy, done by the builder itself, land outside the build.
  await rm(target, { recursive: true, force: true });
  await cp(AGENT_SERVER_HOST_SOURCE, target, {
    recursive: true,
    filter: (src) => !src.split(path.sep).includes('node_modules'),
  });
  return target;
}

/** The start command of an agent-server artifact: the host, given the graph config file, in its directory. */
export function agentServerStart(appDir: string, hostDir: string, graphConfigFile: string, cwd: string): ArtifactManifest['start'] {
  return { command: 'node', args: [path.relative(appDir, path.join(hostDir, 'server.mjs')), path.basename(graphConfigFile)], cwd };
}
