// The agent server of a LangGraph.js project (docs/architecture.md, Runtimes): the builder copies
// this package into the artifact of a project whose graph config names JS/TS graphs and that has
// no "start" script, compiling src/ to dist/, installs it (package-lock.json), and the process
// runtime starts
//   node <the copy>/dist/server.js <graph config file name>
// in the graph config's directory, with PORT, DATABASE_URI, REDIS_URI and REDIS_PREFIX set.
//
// It runs the published @langchain/langgraph-api server (the LangGraph Server API the SDKs and
// Studio speak) with its storage replaced (the modules beside this one), so all instances of
// a deployment, and every later revision, act as one server:
// - assistants, threads and runs: one row each in the deployment's Postgres (schema.ts);
// - checkpoints and store: @langchain/langgraph-checkpoint-postgres (persistence.ts);
// - runs: a queue in Postgres any instance's worker claims under a lease (queue.ts);
// - run events and cancellations: the deployment's Redis, so a run streams, joins and cancels
//   through any instance (streams.ts);
// - crons: rows fired by whichever instance claims a tick (crons.ts); TTL sweeps of threads
//   and store items from langgraph.json (ttl.ts).
// This file loads the project's graphs first (a graph that fails to load ends the start with one
// line naming it), then hands over to main.ts. Nothing of the server is imported statically: the
// module hooks below must be in place before @langchain/langgraph is first loaded.
import { readFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const apiDir = path.dirname(require.resolve('@langchain/langgraph-api/package.json'));
const apiModule = (file: string) => import(pathToFileURL(path.join(apiDir, 'dist', file)).href);

const configFile = path.resolve(process.argv[2] ?? 'langgraph.json');
const cwd = path.dirname(configFile);
/** The part of langgraph.json the host reads itself; the published server validates the rest. */
interface GraphConfig {
  graphs: Record<string, string | { path: string }>;
  auth?: unknown;
  http?: unknown;
  ui?: unknown;
  ui_config?: unknown;
  checkpointer?: unknown;
  store?: unknown;
}
const config = JSON.parse(readFileSync(configFile, 'utf8')) as GraphConfig;
const graphSpec = (g: string | { path: string }) => (typeof g === 'string' ? g : g.path);
const graphFiles = Object.values(config.graphs).map((g) => graphSpec(g).split(':')[0]);

// TypeScript graphs load through tsx, and every import of @langchain/langgraph (the server's own
// included) resolves to the project's copy: one graph runtime, the one the project was built with.
const { register: registerTsx } = await import('tsx/esm/api');
registerTsx();
register(pathToFileURL(path.join(apiDir, 'dist/graph/load.hooks.mjs')).href, import.meta.url, {
  parentURL: 'data:',
  data: { parentURL: pathToFileURL(path.join(cwd, graphFiles[0] ?? 'index.mjs')).href },
});

// Every graph is imported now, before anything listens: a graph that throws when imported (a
// top-level error, an env var it reads that is missing) ends the start with one line naming it,
// the last of the log, which the deployer quotes first in the revision's status message (the
// pattern START_FAILURE in services/deployer/src/process-driver/process-driver.ts). The server's
// own registration imports the same URLs later and gets these cached modules.
const { registerSdkLogger } = await apiModule('logging.mjs');
registerSdkLogger(); // as the server does before it loads graphs: a graph may take the logger at top level
for (const [graphId, graph] of Object.entries(config.graphs)) {
  const spec = graphSpec(graph);
  const [file, exportName = 'default'] = spec.split(':', 2);
  let failure: string | undefined;
  try {
    const module = await import(pathToFileURL(path.resolve(cwd, file)).href);
    if (module[exportName] == null) failure = `the module has no export '${exportName}'`;
  } catch (err) {
    if (err instanceof Error && err.stack) console.error(err.stack);
    failure = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }
  if (failure) {
    console.error(`Graph '${graphId}' (${spec}) failed to load at start: ${failure.split('\n')[0]}`);
    process.exit(1);
  }
}

const { settingsFromEnv, startHost, ttlConfig } = await import('./main.js');
let settings: ReturnType<typeof settingsFromEnv>;
let ttl: ReturnType<typeof ttlConfig>;
try {
  settings = settingsFromEnv(process.env);
  ttl = ttlConfig(config, settings.ttlSweepMs);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}

const options = {
  port: settings.port,
  // Loopback only, whatever the environment says: requests reach it through the serving proxy,
  // which checks the workspace key; an instance port open to the network would skip that.
  host: '127.0.0.1',
  cwd,
  // nWorkers: set by the host from its role and N_JOBS_PER_WORKER (main.ts).
  graphs: config.graphs,
  ...(config.auth ? { auth: config.auth } : {}),
  ...(config.http ? { http: config.http } : {}),
  // Generative UI components (langgraph.json `ui`, `ui_config`): bundled at start, served at /ui/<graph>.
  ...(config.ui ? { ui: config.ui } : {}),
  ...(config.ui_config ? { ui_config: config.ui_config } : {}),
};
await startHost(settings, options, ttl);
