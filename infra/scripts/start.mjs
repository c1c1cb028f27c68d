// `npm start` / `pnpm start`: the whole system on local Postgres + Redis, from a fresh machine.
// Installs pnpm and dependencies, starts Postgres/Redis when they do not answer, migrates, then
// runs each service as its own process (as in production, where each scales on its own).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ROOT, ensureDependencies, ensurePnpm, ensureRegistryTools, ensureSandboxTools, ensureServices, log, run } from './bootstrap.mjs';
import { ensureConsole } from './console.mjs';

/**
 * One entry file per service (docs/architecture.md, Processes), and the built-in image registry
 * (CNCF distribution, supervised by its own entry) unless SLIPWAY_REGISTRY=off.
 */
const SERVICES = [
  { name: 'api', entry: 'services/api/src/main.ts' },
  { name: 'builder', entry: 'services/builder/src/main.ts' },
  { name: 'deployer', entry: 'services/deployer/src/main.ts' },
  ...(process.env.SLIPWAY_REGISTRY === 'off' ? [] : [{ name: 'registry', entry: 'libs/registry/src/main.ts' }]),
];

ensurePnpm();
ensureDependencies();
await ensureServices();
ensureSandboxTools();
if (process.env.SLIPWAY_REGISTRY !== 'off') ensureRegistryTools();
ensureConsole();
run('pnpm', ['--silent', 'slipway', 'migrate', '--create-database']);

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
  });
}

for (const { name, entry } of SERVICES) {
  // One process per service (`node --import tsx`): signals reach the service itself.
  // The api's output is passed through as it is, and read for its "api listening" line.
  const stdio = name === 'api' ? ['inherit', 'pipe', 'inherit'] : 'inherit';
  const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, stdio, env: process.env });
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
