import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Bytes the trees under `dirs` occupy on disk (allocated blocks, so a sparse file counts for
 * what it really takes; hard links once; symlinks are not followed; one filesystem each).
 * Missing directories count 0.
 */
export async function diskUsage(dirs: readonly string[]): Promise<number> {
  const present = dirs.filter((d) => existsSync(d));
  if (!present.length) return 0;
  // `du` rather than a walk in this process: a node_modules tree has tens of thousands of
  // entries, and du walks them without holding up the worker's event loop. Unreadable entries
  // (exit 1) still leave a total.
  const { stdout } = await run('du', ['-s', '-x', '-B1', '--', ...present], { maxBuffer: 1024 * 1024 }).catch(
    (err: { stdout?: string }) => {
      if (typeof err.stdout === 'string' && err.stdout.trim()) return { stdout: err.stdout };
      throw err;
    },
  );
  return stdout
    .split('\n')
    .map((line) => Number(line.split('\t')[0]))
    .filter((n) => Number.isFinite(n))
    .reduce((a, b) => a + b, 0);
}

/** A build used more disk than its quota; the message says how much and where. */
export class DiskQuotaExceeded extends Error {
  override name = 'DiskQuotaExceeded';
  constructor(
    readonly usedBytes: number,
    readonly limitBytes: number,
  ) {
    super(`${mb(usedBytes)} MB used of a ${mb(limitBytes)} MB quota`);
  }
}

export const mb = (bytes: number) => Math.ceil(bytes / (1024 * 1024));

/**
 * The disk quota of one build: its directories are measured on demand (`check`, after each
 * step) and every `intervalMs` while a step runs (`watch`), whose signal aborts when the total
 * passes the limit. A step writing faster than one interval can go past the limit by what it
 * writes in that time; the check after the step still fails the build.
 */
export class DiskQuota {
  constructor(
    private readonly dirs: readonly string[],
    readonly limitBytes: number,
    private readonly intervalMs = 2_000,
  ) {}

  /** Throws DiskQuotaExceeded when the directories hold more than the limit. */
  async check(): Promise<void> {
    const used = await diskUsage(this.dirs);
    if (used > this.limitBytes) throw new DiskQuotaExceeded(used, this.limitBytes);
  }

  /**
   * Measures until `stop()`: `signal` aborts (with the DiskQuotaExceeded as its reason) when the
   * limit is passed. Measurements never overlap; a failed measurement is retried next interval.
   */
  watch(): { signal: AbortSignal; stop: () => void } {
    const controller = new AbortController();
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      try {
        await this.check();
      } catch (err) {
        if (err instanceof DiskQuotaExceeded) {
          controller.abort(err);
          return;
        }
      }
      if (!stopped) timer = setTimeout(tick, this.intervalMs);
    };
    timer = setTimeout(tick, this.intervalMs);
    return {
      signal: controller.signal,
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }
}
