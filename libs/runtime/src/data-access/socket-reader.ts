import type { Socket } from 'node:net';

/** The longest handshake message a front accepts before it relays (Postgres limits startup packets to 10000 bytes). */
export const MAX_HANDSHAKE_BYTES = 10_000;

/**
 * Reads exact byte counts from a socket during a handshake, then hands back whatever arrived
 * beyond it, so the caller can start relaying without losing a byte.
 */
export class SocketReader {
  private chunks: Buffer[] = [];
  private length = 0;
  private waiter: (() => void) | null = null;
  private ended: Error | null = null;
  private readonly onData = (chunk: Buffer) => {
    this.chunks.push(chunk);
    this.length += chunk.length;
    this.waiter?.();
  };
  private readonly onEnd = () => {
    this.ended ??= new Error('The connection closed during the handshake.');
    this.waiter?.();
  };

  constructor(private readonly socket: Socket) {
    socket.on('data', this.onData);
    socket.once('end', this.onEnd);
    socket.once('close', this.onEnd);
    socket.once('error', (err) => {
      this.ended ??= err;
      this.waiter?.();
    });
  }

  /** The next `n` bytes; rejects when the socket ends first. */
  async read(n: number): Promise<Buffer> {
    while (this.length < n) {
      if (this.ended) throw this.ended;
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = null;
    }
    const all = Buffer.concat(this.chunks);
    this.chunks = [all.subarray(n)];
    this.length = all.length - n;
    return all.subarray(0, n);
  }

  /** A CRLF-terminated line (without the CRLF), at most `max` bytes. */
  async line(max = MAX_HANDSHAKE_BYTES): Promise<string> {
    for (;;) {
      const all = Buffer.concat(this.chunks);
      this.chunks = [all];
      const end = all.indexOf('\r\n');
      if (end >= 0) return (await this.read(end + 2)).subarray(0, end).toString('utf8');
      if (all.length > max) throw new Error('Line too long.');
      if (this.ended) throw this.ended;
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = null;
    }
  }

  /** Stops reading and returns the bytes received beyond what was read. */
  release(): Buffer {
    // Paused until the caller pipes it (pipe resumes), so nothing is emitted to nobody meanwhile.
    this.socket.pause();
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onEnd);
    this.socket.off('close', this.onEnd);
    const rest = Buffer.concat(this.chunks);
    this.chunks = [];
    this.length = 0;
    return rest;
  }
}
