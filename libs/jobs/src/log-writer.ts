import { RevisionLogRepository, type DataSource, type LogType } from '@slipway/db';
import { redactValues } from '@slipway/logging';

const FLUSH_EVERY_MS = 250;
const MAX_BATCH = 500;
const MAX_LINE = 8_192;
const MAX_PENDING = 10_000;

/**
 * Streams a process's output into a revision's log (build or deploy), line by line, readable
 * through the API while the work runs. Known secret values are masked before anything is
 * stored; lines are batched (every 250 ms or 500 lines) so chatty installs cost few inserts.
 */
export class RevisionLogWriter {
  private pending: Array<{ level: string; message: string }> = [];
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
    this.pending.push({ level, message: redactValues(message.slice(0, MAX_LINE), this.secretValues) });
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
    // Chained, so lines land in the order they were written. A failed insert (Postgres away
    // for a moment) puts its lines back in front for the next flush instead of losing them;
    // past MAX_PENDING the oldest go, with a marker line saying so.
    this.flushing = this.flushing.then(async () => {
      if (!batch.length) return;
      try {
        await new RevisionLogRepository(this.dataSource.manager).append(this.revisionId, this.type, batch);
      } catch {
        this.pending = [...batch, ...this.pending];
        if (this.pending.length > MAX_PENDING) {
          const dropped = this.pending.length - MAX_PENDING;
          this.pending = [{ level: 'warn', message: `[${dropped} log lines lost: the log store was unavailable]` }, ...this.pending.slice(dropped)];
        }
        this.schedule();
      }
    });
    return this.flushing;
  }
}
