// `npm start` / `pnpm start`: the whole system on local Postgres + Redis, from a fresh machine.
// Installs pnpm and dependencies, starts Postgres/Redis when they do not answer, migrates, then
// runs each service as its own process (as in production, where each scales on its own).
import { spawn } from 'node:child_process';
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

for (const { name, entry } of SERVICES) {
  // One process per service (`node --import tsx`): signals reach the service itself.
  const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, stdio: 'inherit', env: process.env });
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      log(`${name} exited (${signal ?? code}); stopping the others`);
      stopAll(code || 1);
    }
  });
}

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stopAll(0));
