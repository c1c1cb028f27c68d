/** The largest single command the Redis front buffers (values beyond it are refused). */
export const MAX_COMMAND_BYTES = 64 * 1024 * 1024;

/** One client command: its raw bytes and its arguments (decoded as UTF-8). */
export interface RespCommand {
  raw: Buffer;
  args: string[];
}

export type ParseResult = { command: RespCommand; rest: Buffer } | { need: number } | { error: string };

/**
 * Parses the first client command of `buf`: a RESP array of bulk strings (what every client
 * library sends) or an inline command (a plain text line, as telnet sends). `need` when more
 * bytes are needed (at least that many in total).
 */
export function parseCommand(buf: Buffer): ParseResult {
  if (!buf.length) return { need: 1 };
  if (buf[0] !== 0x2a /* '*' */) {
    const end = buf.indexOf('\n');
    if (end < 0) return buf.length > MAX_COMMAND_BYTES ? { error: 'inline command too long' } : { need: buf.length + 1 };
    const line = buf.subarray(0, end).toString('utf8').replace(/\r$/, '');
    return { command: { raw: buf.subarray(0, end + 1), args: line.split(/[ \t]+/).filter(Boolean) }, rest: buf.subarray(end + 1) };
  }
  let offset = 0;
  const readLine = (): string | null => {
    const end = buf.indexOf('\r\n', offset);
    if (end < 0) return null;
    const line = buf.toString('latin1', offset, end);
    offset = end + 2;
    return line;
  };
  const header = readLine();
  if (header === null) return buf.length > 64 ? { error: 'bad array header' } : { need: buf.length + 1 };
  const count = Number(header.slice(1));
  if (!Number.isInteger(count) || count < 0 || count > 1_048_576) return { error: 'bad array length' };
  const args: string[] = [];
  for (let i = 0; i < count; i++) {
    const bulk = readLine();
    if (bulk === null) return { need: buf.length + 1 };
    const length = Number(bulk.slice(1));
    if (bulk[0] !== '$' || !Number.isInteger(length) || length < 0) return { error: 'expected a bulk string' };
    if (offset + length > MAX_COMMAND_BYTES) return { error: 'command too large for the front' };
    if (buf.length < offset + length + 2) return { need: offset + length + 2 };
    args.push(buf.toString('utf8', offset, offset + length));
    offset += length + 2;
  }
  return { command: { raw: buf.subarray(0, offset), args }, rest: buf.subarray(offset) };
}

/** A command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly string[]): Buffer {
  return Buffer.concat([
    Buffer.from(`*${args.length}\r\n`),
    ...args.map((a) => Buffer.concat([Buffer.from(`$${Buffer.byteLength(a)}\r\n`), Buffer.from(a), Buffer.from('\r\n')])),
  ]);
}
