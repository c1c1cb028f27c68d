import type { Server, Socket } from 'node:net';

/**
 * Starts `server` on `host:port` (0: any free port), exclusively (never shared with a cluster
 * sibling), resolving once it listens and rejecting with the bind error (EADDRINUSE, …): every
 * front and proxy a deployer opens on a recorded port.
 */
export function listenExclusive(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * A listening server's lifecycle as the serving proxies and the edge run it: the port it bound,
 * an exclusive listen, and a close that lets in-flight requests finish within a grace period
 * and then cuts every connection left (streams and tunnels never end on their own).
 */
export class ServerLifecycle {
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly server: Server & { closeIdleConnections?: () => void },
    private readonly host: string,
    private readonly requestedPort: number,
  ) {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** The port it listens on (the bound one when asked for port 0). */
  get port(): number {
    const address = this.server.address();
    return address && typeof address === 'object' ? address.port : this.requestedPort;
  }

  listen(): Promise<void> {
    return listenExclusive(this.server, this.host, this.requestedPort);
  }

  async close(graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections?.();
    const timer = setTimeout(() => {
      for (const s of this.sockets) s.destroy();
    }, graceMs);
    await closed;
    clearTimeout(timer);
  }
}
