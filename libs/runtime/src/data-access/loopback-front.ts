import { connect, createServer, type Server, type Socket } from 'node:net';
import { listenExclusive } from '@slipway/net';

export interface Upstream {
  host: string;
  port: number;
}

/**
 * A TCP server in front of a store: owns the listening socket and every connection it relays,
 * so closing it cuts them all. Subclasses speak the store's handshake in `handle`.
 */
export abstract class LoopbackFront {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** Client connections holding a slot (admit): each has, or is about to have, its upstream connection. */
  private admitted = 0;

  constructor(
    private readonly address: { host: string; port: number },
    protected readonly upstreamAddress: Upstream,
  ) {
    this.server = createServer((socket) => {
      this.track(socket);
      // The front's error boundary: a handshake that fails in any way costs that connection only.
      this.handle(socket).catch(() => socket.destroy());
    });
  }

  protected abstract handle(client: Socket): Promise<void>;

  /** The port it listens on (after `listen`; the asked-for one before). */
  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : this.address.port;
  }

  listen(): Promise<void> {
    return listenExclusive(this.server, this.address.host, this.address.port);
  }

  /** Stops listening and cuts every relayed connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A connection to the store, tied to `client`: either closing closes the other. */
  protected async openUpstream(client: Socket): Promise<Socket> {
    const upstream = connect(this.upstreamAddress);
    this.track(upstream);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    await new Promise<void>((resolve, reject) => {
      upstream.once('connect', resolve);
      upstream.once('error', reject);
    });
    return upstream;
  }

  /** Client connections holding a slot now. */
  get connections(): number {
    return this.admitted;
  }

  /**
   * Takes one of `limit` slots for `client` until it closes (no limit: always); false when all
   * are taken, or when the client is gone already.
   */
  protected admit(client: Socket, limit: number | undefined): boolean {
    if (client.destroyed || (limit !== undefined && this.admitted >= limit)) return false;
    this.admitted++;
    client.once('close', () => this.admitted--);
    return true;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }
}
