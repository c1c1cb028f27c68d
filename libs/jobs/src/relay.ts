import type { DataSource, EntityManager } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { JOB_CATALOG, isJobName, type JobName } from './catalog.js';
import type { Queues } from './connections.js';

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
 * Called in the relay's transaction just before the job goes to Redis (e.g. CREATING →
 * AWAITING_BUILD); rolled back if Redis refuses the job.
 */
export type HandOffHook = (manager: EntityManager, name: JobName, payload: Record<string, unknown>) => Promise<void>;

export interface RelayOptions {
  batchSize?: number;
  pollMs?: number;
}

const MAX_BACKOFF_MS = 30_000;

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
  private readonly pollMs: number;
  private listener: { release: () => void } | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly queues: Queues,
    private readonly log: Logger,
    private readonly onHandOff: HandOffHook = async () => {},
    options: RelayOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 100;
    this.pollMs = options.pollMs ?? 500;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.listen();
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.listener?.release();
    this.listener = undefined;
    await this.running;
  }

  /** Relays everything currently due; returns how many rows went out. Tests call this directly. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const sent = await this.relayBatch();
      total += sent;
      if (sent < this.batchSize) return total;
    }
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.drain()
        .then(() => undefined)
        .catch((err) => this.log.warn({ err }, 'outbox relay pass failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.pollMs);
        });
    }, delay);
  }

  /** LISTEN for inserts so work goes out at once; polling remains the fallback. */
  private async listen(): Promise<void> {
    try {
      const driver = this.dataSource.driver as unknown as { master: { connect: () => Promise<any> } };
      const client = await driver.master.connect();
      client.on('notification', () => {
        if (!this.running) this.schedule(0);
      });
      client.on('error', () => {});
      await client.query('LISTEN slipway_outbox');
      if (this.stopped) {
        client.release();
        return;
      }
      this.listener = { release: () => client.release(true) };
    } catch (err) {
      this.log.debug({ err }, 'outbox LISTEN unavailable; polling only');
    }
  }

  private async relayBatch(): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      const rows: OutboxRow[] = await manager.query(
        `SELECT id, queue, job_name, job_id, payload, delay_ms, attempts FROM outbox
          WHERE sent_at IS NULL AND available_at <= now()
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [this.batchSize],
      );
      let sent = 0;
      for (const row of rows) {
        if (await this.relayOne(manager, row)) sent++;
        else break; // Redis is refusing: keep the rest for the next pass, in order.
      }
      return sent;
    });
  }

  private async relayOne(manager: EntityManager, row: OutboxRow): Promise<boolean> {
    if (!isJobName(row.job_name)) {
      await manager.query(`UPDATE outbox SET last_error = $2, available_at = 'infinity' WHERE id = $1`, [row.id, 'unknown job name']);
      this.log.error({ outboxId: row.id, jobName: row.job_name }, 'outbox row names no known job; parked');
      return true;
    }
    const entry = JOB_CATALOG[row.job_name];
    // The status change goes first, under a savepoint, and the job second: a worker can pick
    // the job up before this transaction commits, and its read then waits on our row lock and
    // sees the new status. If Redis refuses the job, the status change is rolled back with it.
    await manager.query('SAVEPOINT relay_row');
    try {
      await this.onHandOff(manager, row.job_name, row.payload);
      await this.queues[entry.queue].add(row.job_name, row.payload, {
        ...entry.options,
        jobId: row.job_id,
        delay: row.delay_ms || undefined,
      });
      await manager.query('RELEASE SAVEPOINT relay_row');
    } catch (err) {
      await manager.query('ROLLBACK TO SAVEPOINT relay_row');
      const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(row.attempts, 10));
      await manager.query(
        `UPDATE outbox SET attempts = attempts + 1, last_error = $2, available_at = now() + ($3 || ' milliseconds')::interval WHERE id = $1`,
        [row.id, String((err as Error).message).slice(0, 500), backoff],
      );
      this.log.warn({ err, outboxId: row.id, jobId: row.job_id }, 'enqueue failed; will retry');
      return false;
    }
    await manager.query(`UPDATE outbox SET sent_at = now() WHERE id = $1`, [row.id]);
    return true;
  }
}
