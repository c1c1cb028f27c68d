import { queryRows, type DataSource, type EntityManager, type PgNotifications } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { JOB_CATALOG, isJobName, type JobName, type QueueName } from './catalog.js';
import type { Queues } from './connections.js';
import { OUTBOX_CHANNEL } from './outbox.js';

interface OutboxRow {
  id: string;
  queue: string;
  job_name: string;
  job_id: string;
  payload: Record<string, unknown>;
  delay_ms: number;
  attempts: number;
}

/**
 * Called in the relay's transaction just before a batch of jobs goes to Redis (e.g. CREATING →
 * AWAITING_BUILD); rolled back if Redis refuses them.
 */
export type HandOffHook = (
  manager: EntityManager,
  jobs: ReadonlyArray<{ name: JobName; payload: Record<string, unknown> }>,
) => Promise<void>;

export interface RelayOptions {
  /** Rows per batch when there is no backlog (a wake-up's few rows go out at once). */
  batchSize?: number;
  /** Batches double up to this while full ones keep coming (a backlog). */
  maxBatchSize?: number;
  /**
   * Batches in flight at once while there is a backlog, each its own transaction (claims skip
   * each other's rows). Default: from the pool size, at most 3, leaving most connections to
   * the process's own work.
   */
  concurrency?: number;
  /**
   * The process's LISTEN connection (it must listen on OUTBOX_CHANNEL): an insert wakes the
   * relay at once. Without it, or while it is down, the relay polls every `pollMs`.
   */
  notifications?: Pick<PgNotifications, 'subscribe' | 'onConnectionChange' | 'connected'>;
  /** Poll period without a LISTEN connection, and after a pass Redis refused. */
  pollMs?: number;
  /** Safety poll while LISTEN works: catches rows of another process's backoff. */
  idlePollMs?: number;
}

const MAX_BACKOFF_MS = 30_000;

/** BullMQ options of a row's job: its catalog entry's, the deterministic id, its delay. */
function jobOptions(name: JobName, row: OutboxRow) {
  return { ...JOB_CATALOG[name].options, jobId: row.job_id, delay: row.delay_ms || undefined };
}

/** What one batch did: rows handed over, and whether a full batch suggests more are waiting. */
interface BatchResult {
  sent: number;
  more: boolean;
}

/**
 * Moves outbox rows to BullMQ. Runs in every process that writes outbox rows; rows are claimed
 * with `FOR UPDATE SKIP LOCKED`, so relays never hand the same row over twice at once, and the
 * deterministic job id makes a repeat after a crash (enqueued, not yet marked) a no-op.
 * While Redis is down, rows stay pending with a growing backoff; nothing is lost.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly batchSize: number;
  private readonly maxBatchSize: number;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly idlePollMs: number;
  private readonly notifications: RelayOptions['notifications'];
  private unsubscribe: Array<() => void> = [];
  /** A wake-up arrived during a pass: run another right after it. */
  private wokenDuringPass = false;
  /** The last pass left rows behind (Redis refused one). */
  private backlog = false;
  /** Redis refused a job since the last successful batch: rows are waiting out a backoff. */
  private refused = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly queues: Queues,
    private readonly log: Logger,
    /** Moves handed-off jobs' revisions on (RevisionFlow.onHandOff, from the phase table's hand-offs), in the claim's transaction. */
    private readonly handOff: { onHandOff: HandOffHook },
    options: RelayOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 100;
    this.maxBatchSize = Math.max(this.batchSize, options.maxBatchSize ?? 1000);
    const poolSize = Number((dataSource.options as { extra?: { max?: number } }).extra?.max ?? 10);
    this.concurrency = Math.max(1, options.concurrency ?? Math.min(3, Math.floor(poolSize / 3)));
    this.pollMs = options.pollMs ?? 500;
    this.idlePollMs = options.idlePollMs ?? 5_000;
    this.notifications = options.notifications;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.redis()?.on('ready', this.redisReady);
    if (this.notifications) {
      this.unsubscribe = [
        this.notifications.subscribe(OUTBOX_CHANNEL, () => this.wake()),
        // Inserts notified while the connection was down are lost: a pass when it comes back
        // finds them; while it is down, passes run every `pollMs`.
        this.notifications.onConnectionChange((up) => {
          if (!this.running) this.schedule(up ? 0 : this.pollMs);
        }),
      ];
    }
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.redis()?.off('ready', this.redisReady);
    clearTimeout(this.timer);
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    await this.running;
  }

  /**
   * Relays everything currently due; returns how many rows went out. Tests call this directly.
   * A pass starts with one small batch; each full batch means a backlog: the next batch is
   * twice as large (up to `maxBatchSize`) and another pass joins (up to `concurrency`), each
   * going on until a batch comes back short. Passes claim with SKIP LOCKED, so no row goes out
   * twice; order holds within a pass (as between the relays of several processes, not across).
   * No pass joins while Redis is refusing jobs.
   */
  async drain(): Promise<number> {
    let total = 0;
    let active = 0;
    let failure: unknown;
    const passes: Array<Promise<void>> = [];
    const pass = async (): Promise<void> => {
      let size = this.batchSize;
      try {
        for (;;) {
          const { sent, more } = await this.relayBatch(size);
          total += sent;
          if (!more) return;
          size = Math.min(size * 2, this.maxBatchSize);
          if (active < this.concurrency && !this.refused) join();
        }
      } finally {
        active--;
      }
    };
    const join = () => {
      active++;
      passes.push(pass().catch((err) => void (failure ??= err)));
    };
    join();
    for (let i = 0; i < passes.length; i++) await passes[i];
    if (failure) throw failure;
    return total;
  }

  /** Runs a pass now, or right after the current one. */
  private wake(): void {
    if (this.running) this.wokenDuringPass = true;
    else this.schedule(0);
  }

  /** The queues' shared connection came back: rows it refused need not wait for the next poll. */
  private readonly redisReady = () => {
    if (this.refused && !this.stopped) this.wake();
  };

  /** The producer connection the queues share (they are all made on one), if it is an ioredis client. */
  private redis():
    | { on: (event: 'ready', fn: () => void) => unknown; off: (event: 'ready', fn: () => void) => unknown }
    | undefined {
    const connection = Object.values(this.queues)[0]?.opts.connection as { on?: unknown; off?: unknown } | undefined;
    return typeof connection?.on === 'function' && typeof connection.off === 'function'
      ? (connection as ReturnType<OutboxRelay['redis']>)
      : undefined;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.wokenDuringPass = false;
      this.running = this.drain()
        .then(() => undefined)
        .catch((err) => {
          this.backlog = true;
          this.log.warn({ err }, 'outbox relay pass failed');
        })
        .finally(() => {
          this.running = undefined;
          // Woken: go again. Idle with a live LISTEN: only a slow safety poll, so an idle
          // stack does not query the outbox continuously. Otherwise (no LISTEN, or it is down
          // and a notification may have been lost meanwhile) poll.
          const listening = this.notifications?.connected === true;
          this.schedule(this.wokenDuringPass ? 0 : listening && !this.backlog ? this.idlePollMs : this.pollMs);
        });
    }, delay);
  }

  /**
   * One batch in bulk: claim (marking the rows sent in the same statement), hand-off hook for
   * all rows (one statement per target status), one `addBulk` per queue (one Redis round trip
   * each, sent together), commit. Statement count per batch is constant, and the row locks the
   * hook took are held across those few concurrent Redis calls only. Any failure (Redis
   * refusing, a row the hook chokes on) rolls the batch back, its sent marks with it, and rows
   * go one by one (`relayRowByRow`, a small batch), which isolates the bad row and backs it off.
   * Already-added jobs are no-ops then (deterministic ids). Returns `more` for a full batch.
   */
  private async relayBatch(size: number): Promise<BatchResult> {
    try {
      const sent = await this.dataSource.transaction(async (manager) => {
        const rows = await this.claim(manager, size, true);
        const known = rows.filter((row): row is OutboxRow & { job_name: JobName } => isJobName(row.job_name));
        if (known.length < rows.length) throw new Error('an outbox row names no known job');
        if (!rows.length) return 0;
        await this.handOff.onHandOff(
          manager,
          known.map((row) => ({ name: row.job_name, payload: row.payload })),
        );
        const byQueue = new Map<QueueName, typeof known>();
        for (const row of known) {
          const queue = JOB_CATALOG[row.job_name].queue;
          const batch = byQueue.get(queue);
          if (batch) batch.push(row);
          else byQueue.set(queue, [row]);
        }
        await Promise.all(
          [...byQueue].map(([queue, batch]) =>
            this.queues[queue].addBulk(
              batch.map((row) => ({ name: row.job_name, data: row.payload, opts: jobOptions(row.job_name, row) })),
            ),
          ),
        );
        if (this.refused) {
          // Redis takes jobs again: rows backing off from its refusals are due now, not after
          // their backoff (up to 30 s) — a burst absorbed during an outage drains at once.
          await manager.query(
            `UPDATE outbox SET available_at = now() WHERE sent_at IS NULL AND attempts > 0 ` +
              `AND available_at > now() AND available_at < 'infinity'`,
          );
          this.refused = false;
        }
        return rows.length;
      });
      return { sent, more: sent === size };
    } catch (err) {
      this.log.debug({ err }, 'outbox batch refused; relaying row by row');
      // At most a small batch: the pass goes on in bulk after it, around the row that failed.
      return this.relayRowByRow(Math.min(size, this.batchSize));
    }
  }

  /**
   * Locks the oldest `size` due rows others have not locked. `markSent` marks them sent in the
   * same statement (the bulk path: its transaction commits only once Redis took every job, so
   * the mark is undone with everything else when it does not).
   */
  private async claim(manager: EntityManager, size: number, markSent = false): Promise<OutboxRow[]> {
    const due = `sent_at IS NULL AND available_at <= now() ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`;
    const columns = 'id, queue, job_name, job_id, payload, delay_ms, attempts';
    const rows = await queryRows<OutboxRow>(
      manager,
      markSent
        ? `UPDATE outbox SET sent_at = now() WHERE id = ANY(ARRAY(SELECT id FROM outbox WHERE ${due})) RETURNING ${columns}`
        : `SELECT ${columns} FROM outbox WHERE ${due}`,
      [size],
    );
    // UPDATE … RETURNING keeps no order: hand over in id order (ids are bigints, as strings).
    if (markSent) rows.sort((a, b) => a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    // After a refusal, keep polling while rows wait out their backoff.
    this.backlog =
      this.backlog &&
      rows.length === 0 &&
      (await manager.query(`SELECT 1 FROM outbox WHERE sent_at IS NULL AND available_at < 'infinity' LIMIT 1`)).length >
        0;
    return rows;
  }

  /** The careful path: each row under a savepoint, stopping at the first Redis refusal. */
  private async relayRowByRow(size: number): Promise<BatchResult> {
    return this.dataSource.transaction(async (manager) => {
      const rows = await this.claim(manager, size);
      let sent = 0;
      for (const row of rows) {
        if (await this.relayOne(manager, row)) sent++;
        else {
          this.backlog = true;
          this.refused = true;
          return { sent, more: false }; // Redis is refusing: keep the rest for the next pass, in order.
        }
      }
      return { sent, more: rows.length === size };
    });
  }

  private async relayOne(manager: EntityManager, row: OutboxRow): Promise<boolean> {
    if (!isJobName(row.job_name)) {
      await manager.query(`UPDATE outbox SET last_error = $2, available_at = 'infinity' WHERE id = $1`, [
        row.id,
        'unknown job name',
      ]);
      this.log.error({ outboxId: row.id, jobName: row.job_name }, 'outbox row names no known job; parked');
      return true;
    }
    // The status change goes first, under a savepoint, and the job second: a worker can pick
    // the job up before this transaction commits, and its read then waits on our row lock and
    // sees the new status. If Redis refuses the job, the status change is rolled back with it.
    await manager.query('SAVEPOINT relay_row');
    try {
      await this.handOff.onHandOff(manager, [{ name: row.job_name, payload: row.payload }]);
      await this.queues[JOB_CATALOG[row.job_name].queue].add(row.job_name, row.payload, jobOptions(row.job_name, row));
      await manager.query('RELEASE SAVEPOINT relay_row');
    } catch (err) {
      await manager.query('ROLLBACK TO SAVEPOINT relay_row');
      const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(row.attempts, 10));
      await manager.query(
        `UPDATE outbox SET attempts = attempts + 1, last_error = $2, ` +
          `available_at = now() + ($3 || ' milliseconds')::interval WHERE id = $1`,
        [row.id, String((err as Error).message).slice(0, 500), backoff],
      );
      this.log.warn({ err, outboxId: row.id, jobId: row.job_id }, 'enqueue failed; will retry');
      return false;
    }
    await manager.query(`UPDATE outbox SET sent_at = now() WHERE id = $1`, [row.id]);
    return true;
  }
}
