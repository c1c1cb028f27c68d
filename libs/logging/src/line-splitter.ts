/** The longest log line kept (bytes of UTF-8); the rest of a longer line is counted and dropped. */
export const MAX_LOG_LINE_BYTES = 64 * 1024;

const MARKED = /… \[\d+ bytes dropped\]$/;
/** Room for the marker past `max` bytes (a line a LineSplitter capped passes as it is). */
const MARKER_ROOM = 48;

/** `text` cut to `max` bytes, with a marker saying how many bytes were dropped (plus `dropped` already). */
export function capLogLine(text: string, dropped = 0, max = MAX_LOG_LINE_BYTES): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= max && !dropped) return text;
  if (!dropped && bytes <= max + MARKER_ROOM && MARKED.test(text)) return text;
  // A multi-byte character cut in two decodes as U+FFFD, which the marker then explains.
  const kept = bytes <= max ? text : Buffer.from(text).subarray(0, max).toString('utf8');
  return `${kept}… [${dropped + Math.max(0, bytes - max)} bytes dropped]`;
}

export interface LineSplitterOptions {
  /** 'lf': lines end at \n (a \r before it is dropped); 'any': at \n, \r\n or a lone \r (progress bars). */
  breaks?: 'lf' | 'any';
  max?: number;
}

/**
 * Splits a byte stream into lines, holding at most `max` bytes of the line in progress however
 * long it gets: the rest of an over-long line is only counted, and the line ends with
 * "… [N bytes dropped]". Works on bytes, so a multi-byte character split across two chunks
 * stays whole. Memory held: at most `max` bytes, whatever the output looks like.
 */
export class LineSplitter {
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private dropped = 0;
  private afterCR = false;
  private readonly max: number;
  private readonly anyBreak: boolean;

  constructor(
    private readonly emit: (line: string) => void,
    options: LineSplitterOptions = {},
  ) {
    this.max = options.max ?? MAX_LOG_LINE_BYTES;
    this.anyBreak = options.breaks === 'any';
  }

  push(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    // The \n of a \r\n split across chunks ends nothing new.
    if (this.afterCR && bytes[0] === 0x0a) start = 1;
    this.afterCR = false;
    while (start <= bytes.length) {
      const end = this.nextBreak(bytes, start);
      if (end < 0) {
        this.take(bytes.subarray(start));
        return;
      }
      this.take(bytes.subarray(start, end));
      this.finish();
      start = end + 1;
      if (bytes[end] === 0x0d) {
        if (end + 1 === bytes.length) this.afterCR = true;
        else if (bytes[end + 1] === 0x0a) start += 1;
      }
    }
  }

  /** Emits the line in progress, if any (the stream ended without a final newline). */
  end(): void {
    if (this.keptBytes || this.dropped) this.finish();
  }

  private nextBreak(bytes: Buffer, from: number): number {
    const lf = bytes.indexOf(0x0a, from);
    if (!this.anyBreak) return lf;
    const cr = bytes.indexOf(0x0d, from);
    return cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
  }

  private take(part: Buffer): void {
    const room = this.max - this.keptBytes;
    if (part.length > room) this.dropped += part.length - Math.max(0, room);
    const keep = part.subarray(0, Math.max(0, room));
    if (!keep.length) return;
    // Copied: a chunk's buffer must not stay alive for the few bytes kept of it.
    this.kept.push(Buffer.from(keep));
    this.keptBytes += keep.length;
  }

  private finish(): void {
    let line = Buffer.concat(this.kept, this.keptBytes);
    if (!this.anyBreak && !this.dropped && line[line.length - 1] === 0x0d) line = line.subarray(0, -1);
    const text = line.toString('utf8');
    const dropped = this.dropped;
    this.kept = [];
    this.keptBytes = 0;
    this.dropped = 0;
    this.emit(dropped ? `${text}… [${dropped} bytes dropped]` : text);
  }
}
