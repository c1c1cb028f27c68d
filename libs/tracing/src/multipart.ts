import { PayloadTooLargeError, UnprocessableError } from './errors.js';
import type { IngestLimits } from './limits.js';

/** One part of a multipart/form-data body. */
export interface MultipartPart {
  /** The `name` of its Content-Disposition. */
  name: string;
  /** Its Content-Type, parameters included (`application/json; length=12`); '' when absent. */
  contentType: string;
  data: Buffer;
}

export type MultipartLimits = Pick<IngestLimits, 'maxBodyBytes' | 'maxPartBytes' | 'maxPartHeaderBytes' | 'maxParts'>;

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');
/** RFC 2046 boundary characters, 1 to 70 of them, not ending in a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/** The boundary of a `multipart/form-data` Content-Type, or null when it is not one. */
export function boundaryOf(contentType: string | undefined): string | null {
  if (!contentType) return null;
  const [type, ...params] = contentType.split(';');
  if (type!.trim().toLowerCase() !== 'multipart/form-data') return null;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0) continue;
    if (param.slice(0, eq).trim().toLowerCase() !== 'boundary') continue;
    let value = param.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    return BOUNDARY.test(value) ? value : null;
  }
  return null;
}

type State = 'preamble' | 'after-delimiter' | 'headers' | 'body' | 'done';

/**
 * An incremental multipart/form-data parser: `push` chunks as they arrive (any split), then
 * `end`. It keeps at most one part in memory beyond what it has already returned, and refuses
 * (413) a body, part or header block past its limits the moment the count passes them, so a
 * hostile body is never read further than the limit. Malformed framing is a 422.
 *
 * The epilogue after the closing delimiter is ignored (RFC 2046), but bounded like the rest.
 */
export class MultipartParser {
  private readonly delimiter: Buffer;
  private buffer: Buffer = Buffer.alloc(0);
  private state: State = 'preamble';
  private total = 0;
  private current: { name: string; contentType: string } | null = null;
  /** The current part's bytes so far, and the tail not yet known to be body (a delimiter may start there). */
  private body: Buffer[] = [];
  private bodyLength = 0;
  private tail: Buffer = Buffer.alloc(0);
  readonly parts: MultipartPart[] = [];

  constructor(
    boundary: string,
    private readonly limits: MultipartLimits,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  push(chunk: Uint8Array): void {
    this.total += chunk.byteLength;
    if (this.total > this.limits.maxBodyBytes)
      throw new PayloadTooLargeError(`The body is larger than ${this.limits.maxBodyBytes} bytes.`);
    if (this.state === 'done') return;
    // Outside a part's body `buffer` holds a few header bytes at most; in a body it is empty.
    this.buffer = this.buffer.length
      ? Buffer.concat([this.buffer, chunk])
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.advance();
  }

  /** The parts, once the whole body is in; 422 when it stopped before its closing delimiter. */
  end(): MultipartPart[] {
    if (this.state !== 'done') throw new UnprocessableError('The multipart body ends before its closing boundary.');
    return this.parts;
  }

  /**
   * Takes `data` into the current part. Only the new bytes and the short tail before them are
   * searched for the delimiter, so a large part costs linear time. True once the part is
   * complete (the rest of `data` is then back in `buffer`).
   */
  private feedBody(data: Buffer): boolean {
    const window = this.tail.length ? Buffer.concat([this.tail, data]) : data;
    const at = window.indexOf(this.delimiter);
    const end = at < 0 ? Math.max(0, window.length - (this.delimiter.length - 1)) : at;
    if (end > 0) this.body.push(window.subarray(0, end));
    this.bodyLength += end;
    if (this.bodyLength > this.limits.maxPartBytes)
      throw new PayloadTooLargeError(`A part is larger than ${this.limits.maxPartBytes} bytes.`);
    if (at < 0) {
      // A copy: the tail must not pin the whole chunk it was cut from.
      this.tail = Buffer.from(window.subarray(end));
      return false;
    }
    this.parts.push({ ...this.current!, data: Buffer.concat(this.body) });
    this.current = null;
    this.body = [];
    this.tail = Buffer.alloc(0);
    this.buffer = window.subarray(at + this.delimiter.length);
    this.state = 'after-delimiter';
    return true;
  }

  private advance(): void {
    for (;;) {
      if (this.state === 'preamble') {
        // The first delimiter may open the body without the CRLF before it: search with a virtual one.
        const at = Buffer.concat([CRLF, this.buffer]).indexOf(this.delimiter);
        if (at < 0) {
          if (this.buffer.length > this.limits.maxPartHeaderBytes)
            throw new UnprocessableError('No multipart boundary where the body starts.');
          return;
        }
        this.buffer = this.buffer.subarray(at - CRLF.length + this.delimiter.length);
        this.state = 'after-delimiter';
      } else if (this.state === 'after-delimiter') {
        if (this.buffer.length < 2) return;
        if (this.buffer[0] === 0x2d && this.buffer[1] === 0x2d) {
          this.state = 'done';
          this.buffer = Buffer.alloc(0);
          return;
        }
        // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
        let i = 0;
        while (i < this.buffer.length && (this.buffer[i] === 0x20 || this.buffer[i] === 0x09)) i += 1;
        if (i > 64) throw new UnprocessableError('Malformed multipart delimiter line.');
        if (this.buffer.length < i + 2) return;
        if (this.buffer[i] !== 0x0d || this.buffer[i + 1] !== 0x0a)
          throw new UnprocessableError('Malformed multipart delimiter line.');
        this.buffer = this.buffer.subarray(i + 2);
        this.state = 'headers';
      } else if (this.state === 'headers') {
        // A part without headers: its blank line comes at once.
        const end = this.buffer.subarray(0, 2).equals(CRLF) ? -2 : this.buffer.indexOf(HEADER_END);
        if (end === -1) {
          if (this.buffer.length > this.limits.maxPartHeaderBytes)
            throw new PayloadTooLargeError(`A part's headers are larger than ${this.limits.maxPartHeaderBytes} bytes.`);
          return;
        }
        if (end > this.limits.maxPartHeaderBytes)
          throw new PayloadTooLargeError(`A part's headers are larger than ${this.limits.maxPartHeaderBytes} bytes.`);
        this.current = parseHeaders(end < 0 ? '' : this.buffer.subarray(0, end).toString('latin1'));
        if (this.parts.length >= this.limits.maxParts)
          throw new PayloadTooLargeError(`The body has more than ${this.limits.maxParts} parts.`);
        this.buffer = this.buffer.subarray(end < 0 ? 2 : end + HEADER_END.length);
        this.body = [];
        this.bodyLength = 0;
        this.tail = Buffer.alloc(0);
        this.state = 'body';
      } else if (this.state === 'body') {
        const data = this.buffer;
        this.buffer = Buffer.alloc(0);
        if (!this.feedBody(data)) return;
      } else {
        return;
      }
    }
  }
}

/** The name and content type of a part's header block; 422 without a name. */
function parseHeaders(block: string): { name: string; contentType: string } {
  let name: string | null = null;
  let contentType = '';
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new UnprocessableError('Malformed multipart part header.');
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-disposition') name = dispositionName(value);
    else if (key === 'content-type') contentType = value;
  }
  if (name === null) throw new UnprocessableError('A multipart part has no Content-Disposition name.');
  return { name, contentType };
}

function dispositionName(value: string): string | null {
  const match = /(?:^|;)\s*name="([^"]*)"/i.exec(value) ?? /(?:^|;)\s*name=([^;\s"]+)/i.exec(value);
  return match ? match[1]! : null;
}

/** Feeds a whole stream through a parser. */
export async function parseMultipart(
  source: AsyncIterable<Uint8Array>,
  boundary: string,
  limits: MultipartLimits,
): Promise<MultipartPart[]> {
  const parser = new MultipartParser(boundary, limits);
  for await (const chunk of source) parser.push(chunk);
  return parser.end();
}
