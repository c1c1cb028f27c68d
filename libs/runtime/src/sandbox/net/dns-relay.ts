import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import type { DnsServer } from '@slipway/config';

const QUERY_TIMEOUT_MS = 4_000;
const MAX_TCP_MESSAGE = 65_535;
const DNS_HEADER = 12;
const RCODE_REFUSED = 5;

/** How much of the process one relay may hold (SLIPWAY_DNS_*; docs/operations.md, Per-tenant bounds). */
export interface DnsRelayLimits {
  /** Queries of one served gateway (one sandbox) in flight at once. */
  maxInflightPerSandbox: number;
  /** Queries in flight at once, every gateway together. */
  maxInflight: number;
  /** Open TCP connections to one served gateway. */
  maxTcpClientsPerSandbox: number;
}

export const DEFAULT_DNS_RELAY_LIMITS: DnsRelayLimits = {
  maxInflightPerSandbox: 64,
  maxInflight: 1024,
  maxTcpClientsPerSandbox: 16,
};

/**
 * The REFUSED answer to `query`: its id, opcode, RD flag and question, with QR set and no
 * records. The question is kept because stub resolvers (glibc) drop an answer whose question
 * does not match theirs and wait for the timeout instead. Null for what is not a DNS query.
 */
export function refusedAnswer(query: Buffer): Buffer | null {
  if (query.length < DNS_HEADER || query[2]! & 0x80) return null;
  let end = DNS_HEADER;
  const questions = query.readUInt16BE(4);
  for (let q = 0; q < questions; q++) {
    // A query's names are plain labels (compression only appears in answers).
    while (end < query.length && query[end] !== 0) end += 1 + query[end]!;
    end += 1 + 4;
    if (end > query.length) return null;
  }
  const answer = Buffer.from(query.subarray(0, end));
  answer[2] = 0x80 | (query[2]! & 0x79); // QR, the opcode and RD; AA and TC cleared
  answer[3] = 0x80 | RCODE_REFUSED; // RA, REFUSED
  answer.fill(0, 6, DNS_HEADER); // no answer, authority or additional records (an EDNS OPT is dropped)
  return answer;
}

/** The `nameserver` lines of a resolv.conf (the host's: what the sandboxes' relay asks). */
export function resolversOf(text: string): string[] {
  const servers = [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)]
    .map((m) => m[1]!.replace(/%.*$/, ''))
    .filter((s) => isIP(s));
  return servers.length ? servers : ['127.0.0.1'];
}

/** The host's /etc/resolv.conf resolvers, on port 53: what the relay asks unless SLIPWAY_SANDBOX_DNS_SERVERS names others. */
export function hostResolvers(): DnsServer[] {
  return resolversOf(readFileSync('/etc/resolv.conf', 'utf8')).map((host) => ({ host, port: 53 }));
}

/** Asks one resolver over UDP; null on timeout or error. */
function askUdp(server: DnsServer, query: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const socket = createSocket(isIP(server.host) === 6 ? 'udp6' : 'udp4');
    const done = (answer: Buffer | null) => {
      clearTimeout(timer);
      socket.close();
      resolve(answer);
    };
    const timer = setTimeout(() => done(null), QUERY_TIMEOUT_MS);
    socket.once('error', () => done(null));
    socket.once('message', (msg) => done(msg));
    socket.send(query, server.port, server.host);
  });
}

/** Asks one resolver over TCP (length-prefixed); null on timeout or error. */
function askTcp(server: DnsServer, query: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: server.host, port: server.port });
    let buffered = Buffer.alloc(0);
    const done = (answer: Buffer | null) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(QUERY_TIMEOUT_MS, () => done(null));
    socket.once('error', () => done(null));
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0))
        done(buffered.subarray(2, 2 + buffered.readUInt16BE(0)));
    });
    const head = Buffer.alloc(2);
    head.writeUInt16BE(query.length);
    socket.write(Buffer.concat([head, query]));
  });
}

/**
 * The sandboxes' resolver: a DNS relay (UDP and TCP, port 53) on each gateway address it is
 * told to serve, passing queries unchanged to its resolvers — SLIPWAY_SANDBOX_DNS_SERVERS, or the
 * host's /etc/resolv.conf — which a sandbox cannot reach itself (they are private, or Docker's
 * 127.0.0.11), asked in order until one answers. Each process
 * that creates or adopts sandboxes serves their gateways.
 *
 * Every query in flight holds one socket of this process (the builder's or deployer's, which
 * also serves every app's connections), so queries are counted per served gateway (one per
 * sandbox: its own /30) and in all; past either bound a query is answered REFUSED at once and
 * opens nothing. A sandbox's TCP connections are bounded per gateway too.
 */
export class DnsRelay {
  private readonly listeners = new Map<string, Promise<{ udp: UdpSocket; tcp: Server }>>();
  private readonly tcpClients = new Set<Socket>();
  private readonly inflightOf = new Map<string, number>();
  private inflightTotal = 0;

  constructor(
    private readonly resolvers: DnsServer[] = hostResolvers(),
    private readonly limits: DnsRelayLimits = DEFAULT_DNS_RELAY_LIMITS,
  ) {}

  /** Queries being asked upstream now (each holds one socket). */
  get inflight(): number {
    return this.inflightTotal;
  }

  /**
   * The answer to a query that arrived at `address`: the resolvers', null when none answered,
   * or REFUSED (no socket opened) when that gateway or the whole relay has its bound in flight.
   */
  private async answer(
    address: string,
    query: Buffer,
    ask: (server: DnsServer, q: Buffer) => Promise<Buffer | null>,
  ): Promise<Buffer | null> {
    const mine = this.inflightOf.get(address) ?? 0;
    if (mine >= this.limits.maxInflightPerSandbox || this.inflightTotal >= this.limits.maxInflight)
      return refusedAnswer(query);
    this.inflightOf.set(address, mine + 1);
    this.inflightTotal += 1;
    try {
      for (const server of this.resolvers) {
        const reply = await ask(server, query);
        if (reply) return reply;
      }
      return null;
    } finally {
      this.inflightTotal -= 1;
      const left = (this.inflightOf.get(address) ?? 1) - 1;
      if (left > 0) this.inflightOf.set(address, left);
      else this.inflightOf.delete(address);
    }
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
      void this.answer(address, query, askUdp).then((reply) => reply && udp.send(reply, from.port, from.address));
    });
    udp.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(53, address, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    const tcp = createServer((client) => this.tcpClient(address, client));
    // Node closes a connection past this on arrival.
    tcp.maxConnections = this.limits.maxTcpClientsPerSandbox;
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen({ host: address, port: 53, exclusive: true }, () => resolve());
    }).catch((err) => {
      udp.close();
      throw err;
    });
    return { udp, tcp };
  }

  private tcpClient(address: string, client: Socket): void {
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
        void this.answer(address, Buffer.from(query), askTcp).then((reply) => {
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
