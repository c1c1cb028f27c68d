import { splitInlineArgs } from './inline-args.js';

/** Redis's own limit on an inline command and on a `*`/`$` header line (PROTO_INLINE_MAX_SIZE). */
export const MAX_INLINE_BYTES = 64 * 1024;
/** Redis's default proto-max-bulk-len: a longer bulk string is refused, never waited for. */
export const MAX_BULK_BYTES = 512 * 1024 * 1024;
/** The most arguments one command may have. */
export const MAX_ARGS = 1024 * 1024;
/** Commands whose arguments fit in this many bytes are held whole; larger ones stream through. */
export const HELD_COMMAND_BYTES = 64 * 1024;

/** The client broke the protocol; the connection is closed with this message. */
export class RespProtocolError extends Error {
  override name = 'RespProtocolError';
}

/** Where a RespRequestParser delivers what it read. */
export interface RequestSink {
  /** A whole command (held in memory: at most HELD_COMMAND_BYTES of arguments). */
  command(args: Buffer[]): void;
  /**
   * The start of a larger command: its argument count and the arguments read so far (at least
   * its name). True: forward it (its canonical bytes follow through `bytes`); false: skip it.
   */
  begin(count: number, head: Buffer[]): boolean;
  /** Canonical RESP bytes of a large command being forwarded. */
  bytes(data: Buffer): void;
}

const CRLF = Buffer.from('\r\n');

/** A RESP header line's number, by the server's rules (string2ll: no sign but '-', no leading zeros). */
function headerNumber(line: Buffer): number | null {
  const text = line.toString('latin1');
  if (!/^(0|-?[1-9][0-9]{0,17})$/.test(text)) return null;
  return Number(text);
}

/**
 * Reads client requests the way the Redis server does (networking.c: a `*` first byte starts a
 * RESP array of `$` bulk strings, anything else an inline command split like sdssplitargs), from
 * chunks in any split. Whatever it reads it hands on as canonical RESP (`encodeCommand`), so the
 * server runs exactly the arguments the front inspected: no quoting, stray CR or odd framing can
 * make the two read different commands. Stricter than the server where that is simpler (a header
 * must end in CRLF, as must a bulk string), and bounded: at most one held command, one header
 * line or one inline line is in memory; bulk strings of larger commands stream through; absurd
 * lengths are refused before a byte of them is awaited.
 *
 * (redis-parser, which ioredis uses, reads replies: it knows no inline commands, accepts reply
 * types a request may not have, and buffers any bulk length it is told. So requests get this.)
 */
export class RespRequestParser {
  private buf: Buffer = Buffer.alloc(0);
  /** Inside an array: arguments still to come (0: between commands). */
  private remaining = 0;
  private count = 0;
  private args: Buffer[] = [];
  private held = 0;
  /** A large command: streaming (forwarded or skipped), the body bytes left of its current bulk (+2 for CRLF). */
  private streaming = false;
  private forwarding = false;
  private bodyLeft = -1;

  constructor(private readonly sink: RequestSink) {}

  /** Reads a chunk; throws RespProtocolError when the client broke the protocol. */
  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.step());
  }

  /** One step of reading; false when more bytes are needed. */
  private step(): boolean {
    if (this.bodyLeft >= 0) return this.streamBody();
    if (this.remaining > 0) return this.bulk();
    if (!this.buf.length) return false;
    return this.buf[0] === 0x2a ? this.arrayHeader() : this.inline();
  }

  private take(n: number): Buffer {
    const head = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return head;
  }

  /** A header line's body (without the type byte and CRLF), or null until it is all there. */
  private headerLine(what: string): Buffer | null {
    const end = this.buf.indexOf(CRLF);
    if (end < 0) {
      if (this.buf.length > MAX_INLINE_BYTES) throw new RespProtocolError(`too big ${what} string`);
      return null;
    }
    if (end > MAX_INLINE_BYTES) throw new RespProtocolError(`too big ${what} string`);
    return this.buf.subarray(1, end);
  }

  private inline(): boolean {
    const end = this.buf.indexOf(0x0a);
    if (end < 0 ? this.buf.length > MAX_INLINE_BYTES : end > MAX_INLINE_BYTES)
      throw new RespProtocolError('too big inline request');
    // The server looks for the newline with strchr: past a NUL it never sees one, and the
    // connection waits until the line is too big. Refused here at once.
    // (Searched within the line only: a chunk of many short commands is scanned once.)
    if (this.buf.subarray(0, end < 0 ? this.buf.length : end).includes(0))
      throw new RespProtocolError('NUL in inline request');
    if (end < 0) return false;
    let line = this.take(end + 1).subarray(0, end);
    if (line[line.length - 1] === 0x0d) line = line.subarray(0, -1);
    const args = splitInlineArgs(line);
    if (!args) throw new RespProtocolError('unbalanced quotes in request');
    if (args.length) this.sink.command(args);
    return true;
  }

  private arrayHeader(): boolean {
    const line = this.headerLine('mbulk count');
    if (!line) return false;
    const count = headerNumber(line);
    if (count === null || count > MAX_ARGS) throw new RespProtocolError('invalid multibulk length');
    this.take(line.length + 3);
    // The server ignores an empty or negative array.
    if (count <= 0) return true;
    this.count = this.remaining = count;
    this.args = [];
    this.held = 0;
    return true;
  }

  private bulk(): boolean {
    if (!this.buf.length) return false;
    if (this.buf[0] !== 0x24) throw new RespProtocolError(`expected '$', got '${String.fromCharCode(this.buf[0]!)}'`);
    const line = this.headerLine('bulk count');
    if (!line) return false;
    const length = headerNumber(line);
    if (length === null || length < 0 || length > MAX_BULK_BYTES) throw new RespProtocolError('invalid bulk length');
    const headerBytes = line.length + 3;
    if (!this.streaming && this.held + length <= HELD_COMMAND_BYTES) {
      if (this.buf.length < headerBytes + length + 2) return false;
      this.take(headerBytes);
      // Copied: the argument must not keep the whole chunk it came in alive.
      this.args.push(Buffer.from(this.take(length)));
      if (!this.take(2).equals(CRLF)) throw new RespProtocolError('bulk string not followed by CRLF');
      this.held += length;
      if (--this.remaining === 0) this.sink.command(this.args);
      return true;
    }
    if (!this.streaming) {
      if (!this.args.length) throw new RespProtocolError('command name too long');
      this.streaming = true;
      this.forwarding = this.sink.begin(this.count, this.args);
      if (this.forwarding)
        this.sink.bytes(Buffer.concat([Buffer.from(`*${this.count}\r\n`), ...this.args.map(encodeBulk)]));
      this.args = [];
    }
    this.take(headerBytes);
    if (this.forwarding) this.sink.bytes(Buffer.from(`$${length}\r\n`));
    this.bodyLeft = length + 2;
    return true;
  }

  /** Passes (or skips) a streamed bulk string's bytes; its CRLF is checked, then re-sent. */
  private streamBody(): boolean {
    if (this.bodyLeft > 2) {
      if (!this.buf.length) return false;
      const part = this.take(Math.min(this.bodyLeft - 2, this.buf.length));
      if (this.forwarding) this.sink.bytes(part);
      this.bodyLeft -= part.length;
      return true;
    }
    if (this.buf.length < 2) return false;
    if (!this.take(2).equals(CRLF)) throw new RespProtocolError('bulk string not followed by CRLF');
    if (this.forwarding) this.sink.bytes(CRLF);
    this.bodyLeft = -1;
    if (--this.remaining === 0) this.streaming = this.forwarding = false;
    return true;
  }
}

function encodeBulk(arg: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`$${arg.length}\r\n`), arg, CRLF]);
}

/** A command as a RESP array of bulk strings. */
export function encodeCommand(args: ReadonlyArray<string | Buffer>): Buffer {
  return Buffer.concat([
    Buffer.from(`*${args.length}\r\n`),
    ...args.map((a) => encodeBulk(typeof a === 'string' ? Buffer.from(a) : a)),
  ]);
}
