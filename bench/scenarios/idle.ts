import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bounded, type BenchRow } from '../support/report.js';
import { freePort, startProcess, type BenchProcess } from '../support/processes.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/** Linux accounts process CPU time in clock ticks of 1/100 s (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SEC = 100;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SEC;
}

async function transactions(stack: BenchStack): Promise<number> {
  const [row] = await stack.dataSource.query(
    `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
  );
  return Number(row.n);
}

/** A worker service, compiled and in its own process as in production, with a health port to wait on. */
async function startWorker(stack: BenchStack, name: 'builder' | 'deployer'): Promise<BenchProcess> {
  const port = await freePort();
  return startProcess(
    [stack.entryOf(name)],
    { ...stack.serviceEnv, SLIPWAY_WORKER_HEALTH_PORT: String(port), SLIPWAY_DATA_DIR: path.join(stack.dataDir, name) },
    port,
  );
}

/**
 * A stack with nothing to do (the api, a builder and a deployer, started and then left alone)
 * must cost next to nothing: no relay or reconciler querying continuously. Measures each process's
 * CPU time over `idleSec` seconds, and the database transactions the whole stack made meanwhile.
 * Runs first, before any other scenario gave the stack work.
 */
export async function idleScenario(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
  const workers = [await startWorker(stack, 'builder'), await startWorker(stack, 'deployer')];
  try {
    const processes = { api: stack.api, builder: workers[0]!, deployer: workers[1]! };
    // Let start-up work (schedulers, adoption, first passes) finish before measuring.
    await new Promise((r) => setTimeout(r, o.idleSettleSec * 1000));
    const cpu0 = Object.fromEntries(Object.entries(processes).map(([n, p]) => [n, cpuSeconds(p.child.pid!)]));
    const tx0 = await transactions(stack);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, o.idleSec * 1000));
    const seconds = (performance.now() - t0) / 1000;
    const tx = (await transactions(stack)) - tx0 - 1; // the measurement's own query
    const rows = Object.entries(processes).map(([n, p]) =>
      bounded('idle stack', `${n} CPU`, ((cpuSeconds(p.child.pid!) - cpu0[n]!) / seconds) * 100, 2, '%'),
    );
    const total = rows.reduce((sum, r) => sum + r.value, 0);
    return [
      ...rows,
      bounded('idle stack', 'all three CPU', total, 2, '%'),
      { scenario: 'idle stack', metric: 'database transactions', value: tx / seconds, unit: '/s' },
    ];
  } finally {
    await Promise.allSettled(workers.map((w) => w.stop()));
  }
}
