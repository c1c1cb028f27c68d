import type { GraphConfig } from '@slipway/domain';
import { BuildError, type PackageInfo } from './build-steps.js';

/**
 * What kind of project a source is (docs/architecture.md, Runtimes):
 * - `server`: its package.json has a `start` script; it brings its own HTTP server, started with
 *   `npm run start` (what every project did before agent servers existed). It needs no graph
 *   config file: a plain Node app deploys as it is.
 * - `agent-server`: no start script, JS/TS graph paths in the graph config; the platform serves
 *   its graphs through the LangGraph Server API.
 * Python graphs are refused: this installation has no Python agent server.
 */
export type ProjectKind = 'server' | 'agent-server';

const JS_GRAPH_FILE = /\.(ts|mts|cts|js|mjs|cjs|tsx|jsx)$/;
const PYTHON_GRAPH_FILE = /\.py$/;

/** The file part of an import string `<file>:<export>`. */
export const graphFile = (importString: string) => importString.slice(0, importString.lastIndexOf(':'));
/** The export part of an import string `<file>:<export>`. */
export const graphExport = (importString: string) => importString.slice(importString.lastIndexOf(':') + 1);

/** Decides the project kind, or fails the build saying why the project cannot be served. */
export function detectProjectKind(config: GraphConfig, pkg: PackageInfo | null, appLabel: string): ProjectKind {
  if (pkg?.scripts.start?.trim()) return 'server';
  const graphs = Object.entries(config.graphs);
  if (!graphs.length) {
    // Only a project without a graph config file has no graphs (a file must name at least one).
    throw new BuildError(
      `Nothing to serve in ${appLabel}: there is no graph config file (langgraph.json) and ` +
        `${pkg ? 'package.json has no "start" script' : 'no package.json'}. ` +
        'Add a "start" script to package.json that runs your server on the port in PORT, or a langgraph.json naming your ' +
        'LangGraph.js graphs, e.g. {"graphs": {"agent": "./src/agent.ts:graph"}}, to have them served by the agent server.',
    );
  }
  const python = graphs.filter(([, spec]) => PYTHON_GRAPH_FILE.test(graphFile(spec)));
  if (python.length) {
    const named = python.map(([id, spec]) => `'${id}' (${spec})`).join(', ');
    throw new BuildError(
      `Graph ${named} is a Python graph, and Python agent servers are not available in this installation: it serves ` +
        `LangGraph.js graphs (.ts, .mts, .js, .mjs files) only. Serving Python graphs would need a Python runtime ` +
        `(python3 with pip, the langgraph-api package and the project's dependencies) on the builder and deployer hosts. ` +
        `Alternatively, give the project a package.json whose "start" script runs your own HTTP server on PORT.`,
    );
  }
  const unknown = graphs.filter(([, spec]) => !JS_GRAPH_FILE.test(graphFile(spec)));
  if (unknown.length) {
    const [id, spec] = unknown[0]!;
    throw new BuildError(
      `Graph '${id}' (${spec}) is not a JavaScript or TypeScript file (.ts, .mts, .js, .mjs): ` +
        'it cannot be served by the LangGraph.js agent server.',
    );
  }
  if (!pkg) {
    throw new BuildError(
      `No package.json in ${appLabel}: a LangGraph.js project needs one listing its dependencies (at least @langchain/langgraph), ` +
        'or a "start" script that runs its own server.',
    );
  }
  return 'agent-server';
}

/**
 * Fails unless the graph config's `node_version` (a major) is the Node.js major the builder and
 * the instances run: there is one Node.js per installation, so another major cannot be honoured.
 */
export function checkNodeVersion(requested: string | null | undefined, running: string = process.versions.node): void {
  if (!requested) return;
  const major = running.split('.')[0];
  if (requested !== major) {
    throw new BuildError(
      `The graph config asks for node_version "${requested}", but this installation runs Node.js ${running} (major ${major}): ` +
        `set "node_version": "${major}" in the graph config, or remove it.`,
    );
  }
}

/** The graph config's custom auth handler (`auth.path`, `./src/auth.ts:auth`), if any. */
export function authPath(config: GraphConfig): string | null {
  const auth = config.auth as { path?: unknown } | undefined;
  return typeof auth?.path === 'string' && auth.path.trim() ? auth.path : null;
}
