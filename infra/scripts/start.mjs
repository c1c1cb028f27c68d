// `npm start` / `pnpm start`: the whole system on local Postgres + Redis, from a fresh machine,
// run as production runs it. Installs pnpm and dependencies, starts Postgres/Redis when they do
// not answer, compiles the services unless their sources are unchanged since the last build
// (start-build.mjs), migrates, then runs each service as its own process with plain
// `node dist/start.js` and NODE_ENV=production (as in production, where each scales on its own).
// `npm run dev` (`--dev`) runs the sources instead, under `tsx watch`, restarting a service when
// its code changes.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import {
  ROOT,
  ensureDependencies,
  ensurePnpm,
  ensureLocalNames,
  ensureRegistryTools,
  ensureSandboxTools,
  ensureServices,
  log,
  run,
} from './bootstrap.mjs';
import { ensureConsole } from './console.mjs';
import { localKeys } from './local-keys.mjs';

const started = performance.now();
const dev = process.argv.includes('--dev');

ensurePnpm();
ensureDependencies();
// Imported once dependencies are there: the build needs esbuild.
const { START_ENTRIES, ensureStartBuild } = await import('./start-build.mjs');
await ensureServices();
ensureSandboxTools();
ensureLocalNames();
if (process.env.SLIPWAY_REGISTRY !== 'off') ensureRegistryTools();
ensureConsole();
if (!dev) await ensureStartBuild();

/** Every process's environment: production's defaults unless `--dev` or the caller chose otherwise. */
const env = dev ? { ...process.env } : { NODE_ENV: 'production', ...process.env };
if (env.NODE_ENV === 'production') Object.assign(env, localKeys(env));
// Production refuses to run user code unsandboxed unless told to; a local start as a user that
// cannot set the sandbox up (not root) runs unsandboxed as outside production, and says so (the
// services warn at every start too).
if (!dev && !process.env.NODE_ENV && !env.SLIPWAY_SANDBOX && process.getuid?.() !== 0) {
  env.SLIPWAY_SANDBOX = 'off';
  log('not root, so no sandbox: SLIPWAY_SANDBOX=off (builds and apps run unsandboxed as this user)');
}

/** `node dist/start.js`, or the source under tsx (`watch` for `--dev`). */
function command(name) {
  const entry = START_ENTRIES[name];
  if (!dev) return [process.execPath, [entry.built]];
  return [
    process.execPath,
    [
      path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'),
      ...(name === 'cli' ? [] : ['watch', '--clear-screen=false']),
      entry.source,
    ],
  ];
}

const [migrate, migrateArgs] = command('cli');
run(migrate, [...migrateArgs, 'migrate', '--create-database'], { env });

/**
 * One entry file per service (docs/architecture.md, Processes), and the built-in image registry
 * (CNCF distribution, supervised by its own entry) unless SLIPWAY_REGISTRY=off.
 */
const SERVICES = [
  'api',
  'builder',
  'deployer',
  ...(env.SLIPWAY_EDGE_HTTP_PORT === 'off' ? [] : ['edge']),
  ...(process.env.SLIPWAY_REGISTRY === 'off' ? [] : ['registry']),
];

const children = new Map();
let stopping = false;

function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
    process.exit(code);
  }, 15_000);
  force.unref();
  const wait = () => (children.size ? setTimeout(wait, 100) : process.exit(code));
  wait();
}

/** Once the api listens, says where the console is (the api logs its public URL then). */
function announceConsole(stdout) {
  let announced = false;
  createInterface({ input: stdout, crlfDelay: Infinity }).on('line', (line) => {
    process.stdout.write(`${line}\n`);
    if (announced || !line.includes('api listening')) return;
    let publicUrl;
    try {
      publicUrl = JSON.parse(line).publicUrl;
    } catch {
      return;
    }
    if (typeof publicUrl !== 'string') return;
    announced = true;
    log(`console: ${publicUrl}/  (sign in with the API key; the API is under ${publicUrl}/v2)`);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    log(
      `started in ${seconds} s (${dev ? 'sources under tsx watch' : 'compiled, NODE_ENV=' + env.NODE_ENV}): ` +
        `API ${publicUrl}/v2, console ${publicUrl}/`,
    );
  });
}

for (const name of SERVICES) {
  // One process per service: signals reach the service itself.
  // The api's output is passed through as it is, and read for its "api listening" line.
  const stdio = name === 'api' ? ['inherit', 'pipe', 'inherit'] : 'inherit';
  const [file, args] = command(name);
  const child = spawn(file, args, { cwd: ROOT, stdio, env });
  children.set(name, child);
  if (child.stdout) announceConsole(child.stdout);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      log(`${name} exited (${signal ?? code}); stopping the others`);
      stopAll(code || 1);
    }
  });
}

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stopAll(0));
