import { Counter, Histogram, type Registry } from 'prom-client';
import type { DataSource } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { RevisionEventReads, type RevisionEventRow } from '@slipway/pipeline';

/** Rows read per query, and queries per scrape: a backlog is worked off over several scrapes. */
const BATCH_SIZE = 1_000;
const MAX_BATCHES_PER_SCRAPE = 20;
/**
 * How long an id skipped by the cursor is looked for again. A gap is a transaction that took a
 * sequence value but had not committed when we read past it (or one that rolled back, which
 * leaves a permanent gap). Status changes commit in milliseconds, so minutes is generous.
 */
const GAP_TTL_MS = 5 * 60_000;
/** Bounds the memory gaps can take; ids beyond these limits are given up on (and logged). */
const MAX_GAP_SPAN = 1_000;
const MAX_TRACKED_GAPS = 10_000;

/** Buckets for time spent in a revision status: from sub-second queue hops to hour-long builds. */
const TIME_IN_STATUS_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600];

export interface RevisionEventsCollectorOptions {
  gapTtlMs?: number;
  batchSize?: number;
}

/**
 * Feeds `slipway_revision_transitions_total{from,to}` and
 * `slipway_revision_time_in_status_seconds{status}` from `revision_events`, the table every
 * process (api, builder, deployer) appends to in the transaction that changes a status. So the
 * api reports transitions made anywhere, without the workers exposing metrics of their own.
 *
 * Each scrape reads the rows after a cursor (the last id seen) and observes them once.
 *
 * - **Start at the current end.** The cursor starts at `max(id)` on the first scrape, not at 0:
 *   a counter starts at zero when its process starts, and replaying the whole history on every
 *   restart would turn each restart into a burst of old transitions in `rate()`. Transitions
 *   made between process start and the first scrape are therefore not counted (Prometheus
 *   treats the restart as a counter reset anyway).
 * - **Ids commit out of order.** A bigserial id is taken when the row is inserted, not when its
 *   transaction commits, so id 101 can be visible while id 100 is still in flight. Ids the
 *   cursor skips are remembered for a few minutes and looked up again on the next scrapes, so a
 *   late commit is still counted exactly once.
 * - **Every api process reports every transition**: aggregate across instances with `max`, not
 *   `sum`.
 */
export class RevisionEventsCollector {
  private cursor: bigint | null = null;
  /** Skipped id → when it was first skipped (ms). */
  private readonly gaps = new Map<bigint, number>();
  private readonly transitions: Counter<'from' | 'to'>;
  private readonly timeInStatus: Histogram<'status'>;
  private readonly gapTtlMs: number;
  private readonly batchSize: number;
  private readonly events: RevisionEventReads;

  constructor(
    registry: Registry,
    dataSource: DataSource,
    private readonly log: Logger,
    options: RevisionEventsCollectorOptions = {},
  ) {
    this.events = new RevisionEventReads(dataSource.manager);
    this.gapTtlMs = options.gapTtlMs ?? GAP_TTL_MS;
    this.batchSize = options.batchSize ?? BATCH_SIZE;
    this.transitions = new Counter({
      name: 'slipway_revision_transitions_total',
      help: 'Revision status changes recorded in revision_events (by any process) since this process first scraped them.',
      labelNames: ['from', 'to'],
      registers: [registry],
    });
    this.timeInStatus = new Histogram({
      name: 'slipway_revision_time_in_status_seconds',
      help: 'Time a revision spent in a status before leaving it, labelled with the status left.',
      labelNames: ['status'],
      buckets: TIME_IN_STATUS_BUCKETS,
      registers: [registry],
    });
  }

  /** Observes the events committed since the last call. Throws if Postgres does not answer. */
  async collect(): Promise<void> {
    if (this.cursor === null) {
      this.cursor = BigInt(await this.events.lastId());
      return;
    }
    await this.collectGaps();
    for (let batch = 0; batch < MAX_BATCHES_PER_SCRAPE; batch++) {
      const rows = await this.events.after(this.cursor.toString(), this.batchSize);
      for (const row of rows) {
        const id = BigInt(row.id);
        this.rememberGap(this.cursor + 1n, id);
        this.observe(row);
        this.cursor = id;
      }
      if (rows.length < this.batchSize) break;
    }
  }

  /** Looks for rows whose ids were skipped, now that their transactions may have committed. */
  private async collectGaps(): Promise<void> {
    if (!this.gaps.size) return;
    const rows = await this.events.withIds([...this.gaps.keys()].map(String));
    for (const row of rows) {
      this.gaps.delete(BigInt(row.id));
      this.observe(row);
    }
    const expired = Date.now() - this.gapTtlMs;
    for (const [id, since] of this.gaps) if (since <= expired) this.gaps.delete(id);
  }

  /** Remembers the ids in [from, to) as not yet seen. */
  private rememberGap(from: bigint, to: bigint): void {
    if (to <= from) return;
    const span = to - from;
    if (span > BigInt(MAX_GAP_SPAN) || this.gaps.size + Number(span) > MAX_TRACKED_GAPS) {
      this.log.warn(
        { from: String(from), to: String(to) },
        'revision_events gap too large to track; late commits in it will not be counted',
      );
      return;
    }
    const now = Date.now();
    for (let id = from; id < to; id++) this.gaps.set(id, now);
  }

  private observe(row: RevisionEventRow): void {
    // The first event of a revision may have no previous status.
    this.transitions.inc({ from: row.from_status ?? 'none', to: row.to_status });
    if (row.from_status !== null && row.time_in_status_ms !== null) {
      this.timeInStatus.observe({ status: row.from_status }, Number(row.time_in_status_ms) / 1000);
    }
  }
}
