import { copyFile, open, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import type { DataSource } from '@slipway/db';
import { RevisionLogWriter } from '@slipway/pipeline';

const POLL_MS = 300;
const MAX_READ = 256 * 1024;

/**
 * Copies one instance's log file into its revision's `deploy` log (docs/api.md, Revisions), so
 * `type=deploy` reads the runtime's output. Instances write to their file directly (it survives
 * the deployer); this follows the file by polling its size. The byte offset already copied is
 * kept beside the file (`<log>.offset`), so a deployer that re-adopts the instance continues
 * where the previous one stopped instead of copying everything again. Secret values are masked
 * by the writer.
 *
 * Rotation (`rotateBytes`): once everything up to a size past the cap is copied, the file is
 * copied to `<log>.1` (replacing the previous one) and truncated in place; the instance writes
 * with O_APPEND, so it goes on at the new end. Bytes written between the copy and the truncation
 * are lost (as with logrotate's copytruncate); bytes in the copy past what was read are still
 * copied into the deploy log. On disk an instance thus keeps its live file (cut back at the first
 * poll past the cap) and one rotated file (what was written between two polls past the cap).
 */
export class DeployLogTailer {
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> = Promise.resolve();
  private readonly writer: RevisionLogWriter;
  private stopped = false;

  constructor(
    dataSource: DataSource,
    revisionId: string,
    private readonly file: string,
    secretValues: readonly string[],
    private readonly rotateBytes = Infinity,
    /** The instance's index, stored with each line so a log can be filtered by instance. */
    instance: number | null = null,
  ) {
    this.writer = new RevisionLogWriter(dataSource, revisionId, 'deploy', secretValues, instance);
  }

  async start(): Promise<void> {
    this.offset = Number((await readFile(this.offsetFile, 'utf8').catch(() => '0')).trim()) || 0;
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
    await this.poll();
  }

  /** Copies what is left in the file, then stops. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    await this.reading;
    await this.read();
    await this.writer.close();
  }

  private get offsetFile(): string {
    return `${this.file}.offset`;
  }

  /** The log file and what rotation and the offset left beside it (a stopped instance's). */
  static async remove(file: string): Promise<void> {
    await Promise.all([file, `${file}.1`, `${file}.offset`].map((f) => rm(f, { force: true })));
  }

  private poll(): Promise<void> {
    // One read at a time: overlapping reads would copy the same bytes twice.
    this.reading = this.reading.then(() => this.read()).catch(() => undefined);
    return this.reading;
  }

  private async read(): Promise<void> {
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch {
      return;
    }
    try {
      const { size } = await handle.stat();
      // A file shorter than what we copied was replaced: start over.
      if (size < this.offset) this.offset = 0;
      while (this.offset < size) {
        const length = Math.min(size - this.offset, MAX_READ);
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, this.offset);
        if (!bytesRead) break;
        // Only whole lines: a partial last line waits for its newline (or for stop()). A line
        // longer than a read goes to the writer piece by piece; it keeps 64 KiB of it.
        const chunk = buffer.subarray(0, bytesRead);
        const newline = chunk.lastIndexOf(0x0a) + 1;
        const end = this.stopped || (!newline && bytesRead === MAX_READ) ? chunk.length : newline;
        if (end <= 0) break;
        this.writer.write(chunk.subarray(0, end));
        this.offset += end;
        // A burst waits in the file, not in memory, while its lines are inserted.
        await this.writer.backlog();
      }
      if (this.offset >= this.rotateBytes && !this.stopped) await this.rotate();
      await writeFile(this.offsetFile, String(this.offset));
    } finally {
      await handle.close();
    }
  }

  private async rotate(): Promise<void> {
    const rotated = `${this.file}.1`;
    await copyFile(this.file, rotated);
    await truncate(this.file, 0);
    const copied = this.offset;
    this.offset = 0;
    await this.copyRest(rotated, copied);
  }

  /** Copies what `file` holds past `from` into the log, a read at a time. */
  private async copyRest(file: string, from: number): Promise<void> {
    const handle = await open(file, 'r').catch(() => null);
    if (!handle) return;
    try {
      const buffer = Buffer.alloc(MAX_READ);
      for (let at = from; ; ) {
        const { bytesRead } = await handle.read(buffer, 0, MAX_READ, at);
        if (!bytesRead) break;
        this.writer.write(buffer.subarray(0, bytesRead));
        at += bytesRead;
        await this.writer.backlog();
      }
    } finally {
      await handle.close();
    }
  }
}
