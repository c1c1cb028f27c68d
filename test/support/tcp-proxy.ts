import net, { type AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a real service (Postgres, Redis) that fails the way networks do:
 * `refuse()` closes the port (connection refused) and drops open connections, `stall()` drops
 * them and then accepts new ones without ever answering (a partition), `restore()` serves again
 * on the same port. Lets a test take a dependency away from one client and give it back.
 */
export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server | undefined;
  private stalled = false;
  port = 0;

  private constructor(private readonly target: { host: string; port: number }) {}

  static async start(targetUrl: string, defaultPort: number): Promise<TcpProxy> {
    const url = new URL(targetUrl);
    const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port || defaultPort) });
    await proxy.listen(0);
    return proxy;
  }

  /** `targetUrl` with host and port replaced by this proxy's. */
  urlFor(targetUrl: string): string {
    const url = new URL(targetUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  async refuse(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    this.dropAll();
    await closed;
  }

  stall(): void {
    this.stalled = true;
    this.dropAll();
  }

  async restore(): Promise<void> {
    this.stalled = false;
    if (!this.server) await this.listen(this.port);
  }

  close(): Promise<void> {
    return this.refuse();
  }

  private listen(port: number): Promise<void> {
    const server = net.createServer((client) => {
      this.track(client);
      if (this.stalled) return;
      const upstream = net.connect(this.target.port, this.target.host);
      this.track(upstream);
      client.pipe(upstream).pipe(client);
    });
    this.server = server;
    return new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        this.port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => this.sockets.delete(socket));
  }

  private dropAll(): void {
    for (const s of this.sockets) s.destroy();
  }
}
