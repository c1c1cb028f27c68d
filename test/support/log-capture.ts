import { Writable } from 'node:stream';

/** A pino destination that keeps every line, so tests can assert on what was (not) logged. */
export class LogCapture extends Writable {
  private readonly chunks: string[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.chunks.push(chunk.toString());
    callback();
  }

  /** Everything logged so far, as one string. */
  text(): string {
    return this.chunks.join('');
  }

  /** Every line parsed as JSON. */
  lines(): Array<Record<string, unknown>> {
    return this.text()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}
