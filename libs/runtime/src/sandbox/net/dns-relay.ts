import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';

const QUERY_TIMEOUT_MS = 4_000;
const MAX_TCP_MESSAGE = 65_535;

/** The `nameserver` lines of a resolv.conf (the host's: what the sandboxes' relay asks). */
export function resolversOf(text: string): string[] {
  const servers = [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!.replace(/%.*$/, '')).filter((s) => isIP(s));
  return servers.length ? servers : ['127.0.0.1'];
}

/** Asks one resolver over UDP; null on timeout or error. */
function askUdp(server: string, query: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const socket = createSocket(isIP(server) === 6 ? 'udp6' : 'udp4');
    const done = (answer: Buffer | null) => {
      clearTimeout(timer);
      socket.close();
      resolve(answer);
    };
    const timer = setTimeout(() => done(null), QUERY_TIMEOUT_MS);
    socket.once('error', () => done(null));
    socket.once('message', (msg) => done(msg));
    socket.send(query, 53, server);
  });
}

/** Asks one resolver over TCP (length-prefixed); null on timeout or error. */
function askTcp(server: string, query: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: server, port: 53 });
    let buffered = Buffer.alloc(0);
    const done = (answer: Buffer | null) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(QUERY_TIMEOUT_MS, () => done(null));
    socket.once('error', () => done(null));
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) done(buffered.subarray(2, 2 + buffered.readUInt16BE(0)));
    });
    const head = Buffer.alloc(2);
    head.writeUInt16BE(query.length);
    socket.write(Buffer.concat([head, query]));
  });
}

/**
 * The sandboxes' resolver: a DNS relay (UDP and TCP, port 53) on each gateway address it is
 * told to serve, passing queries unchanged to the resolvers of the host's /etc/resolv.conf
 * (which a sandbox cannot reach itself: they are private, or Docker's 127.0.0.11). Each process
 * that creates or adopts sandboxes serves their gateways.
 */
export class DnsRelay {
  private readonly listeners = new Map<string, Promise<{ udp: UdpSocket; tcp: Server }>>();
  private readonly tcpClients = new Set<Socket>();

  constructor(private readonly resolvers: string[] = resolversOf(readFileSync('/etc/resolv.conf', 'utf8'))) {}

  private async answer(query: Buffer, ask: (server: string, q: Buffer) => Promise<Buffer | null>): Promise<Buffer | null> {
    for (const server of this.resolvers) {
      const reply = await ask(server, query);
      if (reply) return reply;
    }
    return null;
  }

  /** Serves `address` (idempotent). */
  serve(address: string): Promise<void> {
    let found = this.listeners.get(address);
    if (!found) {
      found = this.open(address);
      this.listeners.set(address, found);
      found.catch(() => this.listeners.delete(address));
    }
    return found.then(() => undefined);
  }

  private async open(address: string): Promise<{ udp: UdpSocket; tcp: Server }> {
    const udp = createSocket('udp4');
    udp.on('message', (query, from) => {
      void this.answer(query, askUdp).then((reply) => reply && udp.send(reply, from.port, from.address));
    });
    udp.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(53, address, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    const tcp = createServer((client) => this.tcpClient(client));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen({ host: address, port: 53, exclusive: true }, () => resolve());
    }).catch((err) => {
      udp.close();
      throw err;
    });
    return { udp, tcp };
  }

  private tcpClient(client: Socket): void {
    this.tcpClients.add(client);
    client.once('close', () => this.tcpClients.delete(client));
    client.on('error', () => client.destroy());
    client.setTimeout(QUERY_TIMEOUT_MS * 3, () => client.destroy());
    let buffered = Buffer.alloc(0);
    client.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length > MAX_TCP_MESSAGE + 2) return void client.destroy();
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const query = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(2 + query.length);
        void this.answer(Buffer.from(query), askTcp).then((reply) => {
          if (!reply || client.destroyed) return;
          const head = Buffer.alloc(2);
          head.writeUInt16BE(reply.length);
          client.write(Buffer.concat([head, reply]));
        });
      }
    });
  }

  /** Stops serving `address`. */
  async stop(address: string): Promise<void> {
    const found = await this.listeners.get(address)?.catch(() => null);
    this.listeners.delete(address);
    if (!found) return;
    found.udp.close();
    await new Promise<void>((resolve) => found.tcp.close(() => resolve()));
  }

  async close(): Promise<void> {
    for (const c of this.tcpClients) c.destroy();
    await Promise.all([...this.listeners.keys()].map((a) => this.stop(a)));
  }
}
