import { isRowRefused, type DataSource } from '@slipway/db';
import { toStorableText } from '@slipway/domain';
import { capLogLine, LineSplitter, redactValues } from '@slipway/logging';
import { RevisionLogRepository, type LogType } from './revision-log.repository.js';

const FLUSH_EVERY_MS = 250;
const MAX_BATCH = 500;
const MAX_PENDING = 10_000;
/** Lines (or characters) waiting for their insert past which `backlog()` makes a reader wait. */
const BACKLOG_LINES = 2 * MAX_BATCH;
const BACKLOG_CHARS = 4 * 1024 * 1024;

/**
 * Streams a process's output into a revision's log (build or deploy), line by line, readable
 * through the API while the work runs. Known secret values are masked and characters Postgres
 * cannot store (U+0000, unpaired surrogates: an app may print anything) replaced before
 * anything is stored; lines are batched (every 250 ms or 500 lines) so chatty installs cost
 * few inserts. A line is at most 64 KiB (MAX_LOG_LINE_BYTES): the rest of a longer one is dropped
 * and counted in a "… [N bytes dropped]" marker, so no output pattern (a newline-free flood
 * included) grows the writer's memory past one capped line per stream plus its pending batch.
 */
export class RevisionLogWriter {
  private pending: PendingLine[] = [];
  private readonly splitters = new Map<string, { splitter: LineSplitter; level: string }>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly dataSource: DataSource,
    private readonly revisionId: string,
    private readonly type: LogType,
    private readonly secretValues: readonly string[] = [],
    /** The index of the instance whose output this is (deploy logs of instances). */
    private readonly instance: number | null = null,
  ) {}

  /** One whole line (e.g. a step the worker itself reports). */
  line(message: string, level = 'info'): void {
    this.append(capLogLine(message), level);
  }

  /**
   * Resolves once the lines written so far are down to a batch or two: a reader of process
   * output awaits it between chunks, so a burst waits on disk (or in a pipe) instead of in memory.
   */
  async backlog(): Promise<void> {
    while (this.behind()) {
      await this.flush();
      // Still behind: the insert failed and put its lines back; wait for the store to return.
      if (this.behind()) await new Promise((r) => setTimeout(r, FLUSH_EVERY_MS));
    }
  }

  private behind(): boolean {
    if (this.pending.length >= BACKLOG_LINES) return true;
    let chars = 0;
    for (const l of this.pending) chars += l.message.length;
    return chars >= BACKLOG_CHARS;
  }

  /**
   * A chunk of process output; split into lines, the trailing partial line kept for later.
   * Each `stream` (e.g. stdout, stderr) keeps its own partial line, so interleaved chunks of
   * two streams never merge into one line.
   */
  write(chunk: Buffer | string, level = 'info', stream = 'out'): void {
    let entry = this.splitters.get(stream);
    if (!entry) {
      const made = { level, splitter: new LineSplitter((l) => l.length && this.append(l, made.level)) };
      this.splitters.set(stream, (entry = made));
    }
    entry.level = level;
    entry.splitter.push(chunk);
  }

  /** Writes everything pending, including trailing partial lines. */
  async close(): Promise<void> {
    for (const { splitter } of this.splitters.values()) splitter.end();
    this.splitters.clear();
    await this.flush();
  }

  /** Queues a line already capped (by capLogLine or a LineSplitter). */
  private append(message: string, level: string): void {
    this.pending.push({
      level: toStorableText(level),
      message: toStorableText(redactValues(message, this.secretValues)),
    });
    this.schedule();
  }

  private schedule(): void {
    if (this.pending.length >= MAX_BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_EVERY_MS);
  }

  private flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    // Chained, so lines land in the order they were written. Lines a failed insert could not
    // store (Postgres away for a moment) go back in front for the next flush instead of being
    // lost; past MAX_PENDING the oldest go, with a marker line saying so.
    this.flushing = this.flushing.then(async () => {
      if (!batch.length) return;
      const unsent = await this.store(batch);
      if (!unsent.length) return;
      this.pending = [...unsent, ...this.pending];
      if (this.pending.length > MAX_PENDING) {
        const dropped = this.pending.length - MAX_PENDING;
        this.pending = [
          { level: 'warn', message: `[${dropped} log lines lost: the log store was unavailable]` },
          ...this.pending.slice(dropped),
        ];
      }
      this.schedule();
    });
    return this.flushing;
  }

  /**
   * Inserts a batch; returns the lines to try again later. A line Postgres refuses for its
   * content would fail every retry and take its whole batch with it, so the batch is then
   * stored line by line: only the refused lines are dropped, and a marker line says how many.
   * When every line is refused (the revision is gone), nothing is left to retry.
   */
  private async store(batch: PendingLine[]): Promise<PendingLine[]> {
    const repo = new RevisionLogRepository(this.dataSource.manager);
    try {
      await repo.append(this.revisionId, this.type, batch, this.instance);
      return [];
    } catch (err) {
      if (!isRowRefused(err)) return batch;
    }
    let refused = 0;
    for (const [index, line] of batch.entries()) {
      try {
        await repo.append(this.revisionId, this.type, [line], this.instance);
      } catch (err) {
        if (!isRowRefused(err)) return batch.slice(index);
        refused += 1;
      }
    }
    if (!refused) return [];
    const marker = { level: 'warn', message: `[${refused} log line${refused === 1 ? '' : 's'} could not be stored]` };
    try {
      await repo.append(this.revisionId, this.type, [marker], this.instance);
      return [];
    } catch (err) {
      return isRowRefused(err) ? [] : [marker];
    }
  }
}

interface PendingLine {
  level: string;
  message: string;
}
