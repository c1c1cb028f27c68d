// `npm test` / `pnpm test`: every test, on a fresh machine too. Installs what is missing,
// makes sure Postgres/Redis answer (unless DATABASE_URL/REDIS_URL point elsewhere), type-checks,
// then runs vitest. Extra arguments go to vitest (`npm test -- test/integration/listeners.test.ts`).
import {
  ensureDependencies,
  ensurePnpm,
  ensureLocalNames,
  ensureRegistryTools,
  ensureSandboxTools,
  ensureServices,
  log,
  run,
} from './bootstrap.mjs';
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureConsole } from './console.mjs';

ensurePnpm();
ensureDependencies();
await ensureServices();
ensureSandboxTools();
ensureLocalNames();
ensureRegistryTools();
// The type check (most of a minute of one core) runs beside the builds below, on the other.
const typecheck = startBeside('type-checking', 'pnpm exec tsc --noEmit -p tsconfig.json');
ensureConsole();
log('checking formatting (pnpm format to fix)');
run('pnpm', ['exec', 'biome', 'format', '.']);
// The services' compiled entries, which test processes run: built here, once, so that neither
// vitest run below builds them while the other reads them. Imported only now: it needs esbuild,
// which a fresh clone has only once ensureDependencies above installed it.
const { ensureStartBuild } = await import('./start-build.mjs');
await ensureStartBuild();
if (!(await typecheck())) process.exit(1);
const dropScratch = memoryScratch();
const alongside = process.env.SLIPWAY_TEST_ALONGSIDE
  ? startBeside('beside the suite', process.env.SLIPWAY_TEST_ALONGSIDE)
  : null;
// The whole suite (no arguments) runs as two lanes (test/lanes.ts): the files that mostly wait on
// clocks one at a time, beside the rest on two workers. Arguments select files: one run.
const args = process.argv.slice(2);
const hostCache = args.length ? null : mkdtempSync(path.join(tmpdir(), 'slipway-test-host-'));
const waiting = hostCache
  ? startBeside('the waiting lane', 'pnpm exec vitest run', {
      SLIPWAY_TEST_LANE: 'waiting',
      SLIPWAY_TEST_HOST_CACHE: hostCache,
    })
  : null;
let failed = false;
try {
  run('pnpm', ['exec', 'vitest', 'run', ...args], {
    env: hostCache ? { ...process.env, SLIPWAY_TEST_LANE: 'main', SLIPWAY_TEST_HOST_CACHE: hostCache } : process.env,
  });
} catch (err) {
  log(err.message);
  failed = true;
}
if (waiting && !(await waiting())) failed = true;
if (alongside && !(await alongside())) failed = true;
if (hostCache) rmSync(hostCache, { recursive: true, force: true });
dropScratch?.();
if (failed) process.exit(1);

/**
 * The run's scratch files (TMPDIR: builds' npm installs, artifacts, copies of the agent server,
 * git clones, browser profiles) in a directory of /dev/shm when it is a memory file system with
 * room, removed at the end. The suite writes gigabytes of small files, and on a virtual
 * machine's disk that costs: measured on a CI machine, copying a 67 MB node_modules took 4.5 s
 * of system time on its ext4 disk and 0.5 s on /dev/shm, an agent deploy 35 s against 18 s.
 * A TMPDIR of the caller's is kept, and so is the disk with SLIPWAY_TEST_SCRATCH=disk. Returns
 * the directory's removal, or null.
 */
function memoryScratch() {
  if (process.env.TMPDIR || process.env.SLIPWAY_TEST_SCRATCH === 'disk') return null;
  const TMPFS_MAGIC = 0x01021994;
  const GiB = 2 ** 30;
  let fs;
  try {
    fs = statfsSync('/dev/shm');
  } catch {
    return null;
  }
  // What the run may hold there at once (a few GB) must fit in memory beside its processes.
  const available = Number(/^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
  if (fs.type !== TMPFS_MAGIC || fs.bavail * fs.bsize < 8 * GiB || available < 12 * GiB) return null;
  const dir = mkdtempSync('/dev/shm/slipway-test-');
  chmodSync(dir, 0o1777); // as /tmp: tests run steps as other users (the database's, sandboxes')
  process.env.TMPDIR = dir;
  log(`scratch files in ${dir} (memory; SLIPWAY_TEST_SCRATCH=disk or a TMPDIR of yours to keep them on disk)`);
  return () => rmSync(dir, { recursive: true, force: true });
}

/**
 * A shell command run in the background while this script goes on (`what` names it in the log):
 * the type check beside the builds, and `SLIPWAY_TEST_ALONGSIDE` beside the suite (CI runs the
 * unit suites on another Node version so; its own databases, prefix and ports). Its output is
 * printed when it is awaited. Returns a wait for its success.
 */
function startBeside(what, command, env = {}) {
  const file = path.join(tmpdir(), `slipway-beside-${process.pid}-${Math.random().toString(36).slice(2)}.log`);
  const out = openSync(file, 'w');
  log(`${what}: ${command}`);
  const child = spawn(command, { shell: true, stdio: ['ignore', out, out], env: { ...process.env, ...env } });
  const done = new Promise((resolve) => {
    child.once('error', (err) => resolve(`could not start: ${err.message}`));
    child.once('exit', (code, signal) => resolve(code === 0 ? null : `exited with ${code ?? signal}`));
  });
  return async () => {
    const problem = await done;
    closeSync(out);
    process.stdout.write(readFileSync(file, 'utf8'));
    rmSync(file, { force: true });
    log(problem ? `${what}: ${command} ${problem}` : `${what}: ${command} passed`);
    return !problem;
  };
}
