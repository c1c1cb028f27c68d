import type { EntityManager } from 'typeorm';
import { PARTITIONS_LOCK } from './run.repository.js';

/** The partitioned tables of the runs store, each cut into `<table>_pYYYYMMDD` per UTC day. */
export const PARTITIONED_TABLES = ['tracing_runs', 'tracing_run_payloads'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** One daily partition: its table name and the UTC day (`YYYY-MM-DD`) it holds. */
export interface DailyPartition {
  table: PartitionedTable;
  name: string;
  day: string;
}

/** PARTITIONS_LOCK alone: creating and dropping a day never interleave, and no write is midway. */
const PARTITIONS_LOCKED = `SELECT pg_advisory_xact_lock(${PARTITIONS_LOCK})`;
/** Rows per delete statement, so no statement holds its locks for long. */
const BATCH = 5_000;

/** `window_days(t)`: the workspace's `trace_retention_days`, else the default ($1). */
const windowOf = (alias: string) =>
  `COALESCE((SELECT q.trace_retention_days FROM workspace_quotas q WHERE q.workspace_id = ${alias}.workspace_id), $1::int)`;

/**
 * The statements of tracing retention (docs/tracing.md, Retention): which windows are in force,
 * which daily partitions exist, dropping one whole, and the partition-bounded and batched
 * deletes of rows past a workspace's own (shorter) window.
 */
export class TracingRetentionRepository {
  constructor(private readonly manager: EntityManager) {}

  /** The longest and the shortest window in force (days): the default and every override. */
  async windows(defaultDays: number): Promise<{ longest: number; shortest: number }> {
    const [row] = await this.manager.query(
      `SELECT GREATEST($1::int, max(trace_retention_days)) AS longest, LEAST($1::int, min(trace_retention_days)) AS shortest
         FROM workspace_quotas WHERE trace_retention_days IS NOT NULL`,
      [defaultDays],
    );
    return { longest: Number(row.longest), shortest: Number(row.shortest) };
  }

  /** The daily partitions of the runs tables, oldest day first; tables named otherwise are not ours and left alone. */
  async partitions(): Promise<DailyPartition[]> {
    const rows: Array<{ parent: PartitionedTable; name: string }> = await this.manager.query(
      `SELECT p.relname AS parent, c.relname AS name
         FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid
         JOIN pg_class p ON p.oid = i.inhparent
        WHERE i.inhparent = ANY(ARRAY['tracing_runs'::regclass, 'tracing_run_payloads'::regclass])`,
    );
    const out: DailyPartition[] = [];
    for (const { parent, name } of rows) {
      const m = new RegExp(`^${parent}_p(\\d{4})(\\d\\d)(\\d\\d)$`).exec(name);
      if (m) out.push({ table: parent, name, day: `${m[1]}-${m[2]}-${m[3]}` });
    }
    return out.sort((a, b) => a.day.localeCompare(b.day) || a.table.localeCompare(b.table));
  }

  /**
   * Detaches and drops one day's partitions of both tables, in one transaction (the caller's)
   * under the partition lock, so a writer creating that day again waits and then makes it anew.
   * `lock_timeout` bounds how long the detach queues for the parent's lock behind long reads
   * (and holds up writers queued behind it): past it the day is left for the next pass.
   */
  async dropDay(day: string, lockTimeoutMs: number): Promise<string[]> {
    if (!/^\d{4}-\d\d-\d\d$/.test(day)) throw new Error(`not a day: ${day}`);
    await this.manager.query(`SELECT set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
    await this.manager.query(PARTITIONS_LOCKED);
    const dropped: string[] = [];
    for (const table of PARTITIONED_TABLES) {
      const name = `${table}_p${day.replaceAll('-', '')}`;
      const [exists] = await this.manager.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [name]);
      if (!exists.ok) continue;
      await this.manager.query(`ALTER TABLE ${table} DETACH PARTITION ${name}`);
      await this.manager.query(`DROP TABLE ${name}`);
      dropped.push(name);
    }
    return dropped;
  }

  /**
   * Deletes, from one partition only, the rows whose workspace's window ended after their start
   * (those of workspaces with a window shorter than the longest); in batches. Returns how many.
   */
  async deletePastWindow(partition: string, defaultDays: number, now: Date, before: Date): Promise<number> {
    if (!/^tracing_(runs|run_payloads)_p\d{8}$/.test(partition))
      throw new Error(`not a tracing partition: ${partition}`);
    return this.deletePast(partition, 'start_time', defaultDays, now, before);
  }

  /**
   * Trace summaries that started before their workspace's window; in batches. `before` (now
   * less the shortest window in force) lets the start-time index find the candidates.
   */
  async deleteTracesPastWindow(defaultDays: number, now: Date, before: Date): Promise<number> {
    return this.deletePast('tracing_traces', 'start_time', defaultDays, now, before);
  }

  /** Updates held for a create that never came within the workspace's window. */
  async deletePendingPastWindow(defaultDays: number, now: Date, before: Date): Promise<number> {
    return this.deletePast('tracing_pending_updates', 'received_at', defaultDays, now, before);
  }

  /** Rows of `table` whose `column` is before `now` less their workspace's window, in batches of BATCH. */
  private async deletePast(
    table: string,
    column: 'start_time' | 'received_at',
    defaultDays: number,
    now: Date,
    before: Date,
  ): Promise<number> {
    const sql = `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
       SELECT x.ctid FROM ${table} x
        WHERE x.${column} < $3::timestamptz AND x.${column} < $2::timestamptz - make_interval(days => ${windowOf('x')}) LIMIT ${BATCH}))`;
    const params = [defaultDays, now.toISOString(), before.toISOString()];
    let total = 0;
    for (;;) {
      const [, count] = (await this.manager.query(sql, params)) as [unknown, number];
      total += count ?? 0;
      if ((count ?? 0) < BATCH) return total;
    }
  }
}
