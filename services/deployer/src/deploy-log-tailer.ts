import { open, readFile, writeFile } from 'node:fs/promises';
import type { DataSource } from '@slipway/db';
import { RevisionLogWriter } from '@slipway/jobs';

const POLL_MS = 300;
const MAX_READ = 256 * 1024;

/**
 * Copies one instance's log file into its revision's `deploy` log (docs/api.md, Revisions), so
 * `type=deploy` reads the runtime's output. Instances write to their file directly (it survives
 * the deployer); this follows the file by polling its size. The byte offset already copied is
 * kept beside the file (`<log>.offset`), so a deployer that re-adopts the instance continues
 * where the previous one stopped instead of copying everything again. Secret values are masked
 * by the writer.
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
  ) {
    this.writer = new RevisionLogWriter(dataSource, revisionId, 'deploy', secretValues);
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
        // Only whole lines: a partial last line waits for its newline (or for stop()).
        const chunk = buffer.subarray(0, bytesRead);
        const newline = chunk.lastIndexOf(0x0a) + 1;
        const end = this.stopped || (!newline && bytesRead === MAX_READ) ? chunk.length : newline;
        if (end <= 0) break;
        this.writer.write(chunk.subarray(0, end));
        this.offset += end;
      }
      await writeFile(this.offsetFile, String(this.offset));
    } finally {
      await handle.close();
    }
  }
}
