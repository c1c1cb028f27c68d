import { isRowRefused, RevisionLogRepository, type DataSource, type LogType } from '@slipway/db';
import { toStorableText } from '@slipway/domain';
import { redactValues } from '@slipway/logging';

const FLUSH_EVERY_MS = 250;
const MAX_BATCH = 500;
const MAX_LINE = 8_192;
const MAX_PENDING = 10_000;

/**
 * Streams a process's output into a revision's log (build or deploy), line by line, readable
 * through the API while the work runs. Known secret values are masked and characters Postgres
 * cannot store (U+0000, unpaired surrogates: an app may print anything) replaced before
 * anything is stored; lines are batched (every 250 ms or 500 lines) so chatty installs cost
 * few inserts.
 */
export class RevisionLogWriter {
  private pending: PendingLine[] = [];
  private readonly partials = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly dataSource: DataSource,
    private readonly revisionId: string,
    private readonly type: LogType,
    private readonly secretValues: readonly string[] = [],
  ) {}

  /** One whole line (e.g. a step the worker itself reports). */
  line(message: string, level = 'info'): void {
    this.pending.push({ level: toStorableText(level), message: toStorableText(redactValues(message.slice(0, MAX_LINE), this.secretValues)) });
    this.schedule();
  }

  /**
   * A chunk of process output; split into lines, the trailing partial line kept for later.
   * Each `stream` (e.g. stdout, stderr) keeps its own partial line, so interleaved chunks of
   * two streams never merge into one line.
   */
  write(chunk: Buffer | string, level = 'info', stream = 'out'): void {
    const text = (this.partials.get(stream) ?? '') + chunk.toString();
    const lines = text.split(/\r?\n/);
    this.partials.set(stream, lines.pop() ?? '');
    for (const l of lines) if (l.length) this.line(l, level);
  }

  /** Writes everything pending, including trailing partial lines. */
  async close(): Promise<void> {
    for (const partial of this.partials.values()) if (partial) this.line(partial);
    this.partials.clear();
    await this.flush();
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
        this.pending = [{ level: 'warn', message: `[${dropped} log lines lost: the log store was unavailable]` }, ...this.pending.slice(dropped)];
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
      await repo.append(this.revisionId, this.type, batch);
      return [];
    } catch (err) {
      if (!isRowRefused(err)) return batch;
    }
    let refused = 0;
    for (const [index, line] of batch.entries()) {
      try {
        await repo.append(this.revisionId, this.type, [line]);
      } catch (err) {
        if (!isRowRefused(err)) return batch.slice(index);
        refused += 1;
      }
    }
    if (!refused) return [];
    const marker = { level: 'warn', message: `[${refused} log line${refused === 1 ? '' : 's'} could not be stored]` };
    try {
      await repo.append(this.revisionId, this.type, [marker]);
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
