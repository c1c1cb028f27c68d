import { connect } from 'node:net';

/** A RESP array of bulk strings (what client libraries send). */
export function resp(...args: Array<string | Buffer>): Buffer {
  return Buffer.concat([
    Buffer.from(`*${args.length}\r\n`),
    ...args.flatMap((a) => {
      const b = typeof a === 'string' ? Buffer.from(a) : a;
      return [Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n')];
    }),
  ]);
}

/** `ACL WHOAMI` then `ECHO <nonce>`: the reply before the nonce's echo is who the connection is. */
export const whoamiProbe = (nonce: string) => Buffer.concat([resp('ACL', 'WHOAMI'), resp('ECHO', nonce)]);

/**
 * Sends `pieces` on a fresh connection to `port`, each as its own write with a pause between (so
 * they arrive as separate TCP packets), and returns everything received until the echo of
 * `lastNonce` arrives, the connection closes, or nothing more came for `quietMs` after the last
 * piece was sent (a stream that left a command unfinished waits for bytes that never come).
 */
export async function sendInPieces(
  port: number,
  pieces: Buffer[],
  lastNonce: string,
  quietMs = 2_000,
): Promise<{ text: string; closed: boolean }> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  let text = '';
  let closed = false;
  let sent = false;
  let finish = () => undefined as void;
  let quiet: NodeJS.Timeout | undefined;
  const restartQuiet = () => {
    clearTimeout(quiet);
    if (sent) quiet = setTimeout(finish, quietMs);
  };
  const done = new Promise<void>((resolve) => {
    finish = () => {
      clearTimeout(quiet);
      resolve();
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes(`\r\n${lastNonce}\r\n`)) finish();
      else restartQuiet();
    });
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  for (const piece of pieces) {
    if (closed) break;
    if (!socket.write(piece)) await new Promise((r) => socket.once('drain', r).once('close', r));
    await new Promise((r) => setTimeout(r, 1));
  }
  sent = true;
  restartQuiet();
  await done;
  socket.destroy();
  return { text, closed };
}

/**
 * What the connection answered to the ACL WHOAMI before `ECHO <nonce>`: its bulk string (a
 * user name) or its error or status line; undefined when the echo never came.
 */
export function whoamiAnswer(text: string, nonce: string): { user?: string; error?: string } | undefined {
  const echo = text.indexOf(`$${nonce.length}\r\n${nonce}\r\n`);
  if (echo < 0) return undefined;
  const before = text.slice(0, echo);
  const match = /(?:\$\d+\r\n([^\r\n]*)|([-+!][^\r\n]*))\r\n$/.exec(before);
  if (!match) return { error: `unreadable: ${JSON.stringify(before.slice(-200))}` };
  return match[1] !== undefined ? { user: match[1] } : { error: match[2] };
}
