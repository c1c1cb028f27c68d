import { describe, expect, it } from 'vitest';
import { encodeCommand, HELD_COMMAND_BYTES, RespRequestParser } from './resp-requests.js';

/** Feeds `input` in `cut`-byte pieces; returns the held commands, streamed bytes and any error. */
function read(input: Buffer | string, cut = Infinity, forward = true) {
  const commands: string[][] = [];
  const begun: string[][] = [];
  const streamed: Buffer[] = [];
  const parser = new RespRequestParser({
    command: (args) => void commands.push(args.map((a) => a.toString('latin1'))),
    begin: (_count, head) => (begun.push(head.map((a) => a.toString('latin1'))), forward),
    bytes: (data) => void streamed.push(Buffer.from(data)),
  });
  const bytes = typeof input === 'string' ? Buffer.from(input, 'latin1') : input;
  let error = '';
  try {
    for (let at = 0; at < bytes.length; at += Math.min(cut, bytes.length)) parser.push(bytes.subarray(at, at + cut));
  } catch (err) {
    error = (err as Error).message;
  }
  return { commands, begun, streamed: Buffer.concat(streamed), error };
}

describe('RespRequestParser', () => {
  it('reads RESP arrays and inline commands alike, one byte at a time too', () => {
    const input = `${encodeCommand(['SET', 'k', 'v a']).toString()}"AUTH" 'def\\'ault' x\r\nPING\n*0\r\n*-1\r\n\r\n`;
    for (const cut of [Infinity, 1, 3]) {
      expect(read(input, cut)).toMatchObject({
        commands: [['SET', 'k', 'v a'], ['AUTH', "def'ault", 'x'], ['PING']],
        error: '',
      });
    }
  });

  it('streams a command past the held size after its name, as canonical RESP', () => {
    const big = 'b'.repeat(HELD_COMMAND_BYTES + 10);
    const input = encodeCommand(['SET', 'k', big, 'tail']);
    const { begun, streamed, commands } = read(input, 1000);
    expect(commands).toEqual([]);
    expect(begun).toEqual([['SET', 'k']]);
    expect(streamed.equals(input)).toBe(true);
    // Refused: skipped whole, the next command read as usual.
    const skipped = read(Buffer.concat([input, encodeCommand(['PING'])]), 1000, false);
    expect(skipped.streamed.length).toBe(0);
    expect(skipped.commands).toEqual([['PING']]);
  });

  it('refuses what the server refuses or would wait on, without waiting for absurd lengths', () => {
    expect(read('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999999\r\n').error).toBe('invalid bulk length');
    expect(read('*2\r\n$-0\r\n').error).toBe('invalid bulk length');
    expect(read('*01\r\n').error).toBe('invalid multibulk length');
    expect(read('*2\r\n+OK\r\n').error).toBe("expected '$', got '+'");
    expect(read('*1\r\n$4\r\nPINGxx').error).toBe('bulk string not followed by CRLF');
    expect(read('"AUTH default x\r\n').error).toBe('unbalanced quotes in request');
    expect(read('"AUTH"x default\r\n').error).toBe('unbalanced quotes in request');
    expect(read('AUTH\0 default x\r\n').error).toBe('NUL in inline request');
    expect(read('A'.repeat(70 * 1024)).error).toBe('too big inline request');
    expect(read(`*${'1'.repeat(70 * 1024)}`).error).toBe('too big mbulk count string');
  });
});
