import { connect, createServer } from 'node:net';
import { networkInterfaces } from 'node:os';

/** A TCP port that was free a moment ago on 127.0.0.1 (for a child process to listen on). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** An IPv4 address of this machine that is not loopback (eth0's), or null when it has none. */
export function nonLoopbackAddress(): string | null {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return null;
}

/**
 * Whether a TCP connection to `host:port` opens: `refused` (a reset), `timeout` (dropped: no
 * answer within `timeoutMs`), or another error's code.
 */
export function tryConnect(
  host: string,
  port: number,
  timeoutMs = 1_500,
): Promise<'connected' | 'refused' | 'timeout' | string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (outcome: string) => {
      socket.destroy();
      resolve(outcome);
    };
    socket.setTimeout(timeoutMs, () => done('timeout'));
    socket.once('connect', () => done('connected'));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done(err.code === 'ECONNREFUSED' ? 'refused' : (err.code ?? err.message)),
    );
  });
}
