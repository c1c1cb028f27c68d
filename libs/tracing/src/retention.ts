import type { DataSource } from 'typeorm';
import { TracingRetentionRepository } from './retention.repository.js';

const DAY_MS = 24 * 3600_000;

export interface TracingRetentionReport {
  /** Partitions (of `tracing_runs` and `tracing_run_payloads`) detached and dropped whole. */
  partitionsDropped: string[];
  /** Days whose partitions could not be locked in time: the next pass drops them. */
  daysPostponed: string[];
  /** Rows deleted from the partitions kept (workspaces whose window is shorter than the longest). */
  rowsDeleted: number;
  tracesDeleted: number;
  pendingUpdatesDeleted: number;
}

export interface TracingRetentionOptions {
  /** How long a detach may queue for the parent table's lock before the day waits for the next pass. */
  lockTimeoutMs?: number;
  now?: () => number;
}

/**
 * Tracing retention (docs/tracing.md, Retention), a step of the retention pass. A workspace keeps
 * the traces whose runs started within its window (`trace_retention_days`, else
 * `SLIPWAY_TRACE_RETENTION_DAYS`). Runs are partitioned by day of start time, shared by every
 * workspace, so:
 * - a day wholly past the longest window in force is dropped whole (detach, drop: no row-by-row
 *   delete and no dead tuples);
 * - in the days kept, rows of workspaces with a shorter window are deleted by statements bounded
 *   to one partition at a time, in batches (only when some workspace has a shorter window than
 *   another, so with no override nothing is ever deleted row by row);
 * - trace summaries and held updates past their workspace's window are deleted in batches.
 * Safe to run concurrently with itself and with ingest: days are dropped under the lock the
 * writer takes to create them.
 */
export class TracingRetention {
  private readonly lockTimeoutMs: number;
  private readonly now: () => number;

  constructor(
    private readonly dataSource: DataSource,
    private readonly defaultDays: number,
    options: TracingRetentionOptions = {},
  ) {
    this.lockTimeoutMs = options.lockTimeoutMs ?? 2_000;
    this.now = options.now ?? Date.now;
  }

  async run(): Promise<TracingRetentionReport> {
    const now = new Date(this.now());
    const repo = new TracingRetentionRepository(this.dataSource.manager);
    const { longest, shortest } = await repo.windows(this.defaultDays);
    const report: TracingRetentionReport = {
      partitionsDropped: [],
      daysPostponed: [],
      rowsDeleted: 0,
      tracesDeleted: 0,
      pendingUpdatesDeleted: 0,
    };

    // A day [d, d+1) is wholly past every window when its end is at or before now - longest.
    const dropBefore = now.getTime() - longest * DAY_MS;
    const partitions = await repo.partitions();
    const startOf = (day: string) => Date.parse(`${day}T00:00:00Z`);
    for (const day of new Set(partitions.filter((p) => startOf(p.day) + DAY_MS <= dropBefore).map((p) => p.day))) {
      try {
        report.partitionsDropped.push(
          ...(await this.dataSource.transaction((m) =>
            new TracingRetentionRepository(m).dropDay(day, this.lockTimeoutMs),
          )),
        );
      } catch (err) {
        // lock_not_available: a long read (or a writer) holds the table; the next pass retries.
        if ((err as { code?: string }).code !== '55P03') throw err;
        report.daysPostponed.push(day);
      }
    }

    // Days kept that begin before the shortest window's cutoff hold rows of some workspace past its own.
    const deleteBefore = new Date(now.getTime() - shortest * DAY_MS);
    if (shortest < longest) {
      for (const p of partitions) {
        if (startOf(p.day) + DAY_MS <= dropBefore || startOf(p.day) >= deleteBefore.getTime()) continue;
        try {
          report.rowsDeleted += await repo.deletePastWindow(p.name, this.defaultDays, now, deleteBefore);
        } catch (err) {
          // undefined_table: a concurrent pass dropped this day meanwhile.
          if ((err as { code?: string }).code !== '42P01') throw err;
        }
      }
    }
    report.tracesDeleted = await repo.deleteTracesPastWindow(this.defaultDays, now, deleteBefore);
    report.pendingUpdatesDeleted = await repo.deletePendingPastWindow(this.defaultDays, now, deleteBefore);
    return report;
  }
}
