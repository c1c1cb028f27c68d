import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DnsRelay } from './dns-relay.js';

/**
 * The sandboxes' DNS relay on loopback addresses of this test alone (port 53 needs root): a
 * stand-in resolver answers every query with `answer:` + the query, over UDP and TCP.
 */
const root = process.getuid?.() === 0;
const loop = () => `127.${randomInt(1, 250)}.${randomInt(1, 250)}.${randomInt(1, 250)}`;
const upstreamAddress = loop();
const relayAddress = loop();
const upstreamUdp = createSocket('udp4');
const upstreamTcp = createServer((socket) => {
  socket.on('data', (chunk) => {
    const query = chunk.subarray(2, 2 + chunk.readUInt16BE(0));
    const answer = Buffer.concat([Buffer.from('answer:'), query]);
    socket.write(Buffer.concat([Buffer.from([answer.length >> 8, answer.length & 255]), answer]));
  });
});
const relay = new DnsRelay([{ host: upstreamAddress, port: 53 }]);

beforeAll(async () => {
  if (!root) return;
  upstreamUdp.on('message', (query, from) =>
    upstreamUdp.send(Buffer.concat([Buffer.from('answer:'), query]), from.port, from.address),
  );
  await new Promise<void>((resolve) => upstreamUdp.bind(53, upstreamAddress, resolve));
  await new Promise<void>((resolve) => upstreamTcp.listen(53, upstreamAddress, resolve));
  await relay.serve(relayAddress);
});

afterAll(async () => {
  await relay.close();
  if (!root) return;
  upstreamUdp.close();
  await new Promise((resolve) => upstreamTcp.close(resolve));
});

describe('DnsRelay', () => {
  it('passes a UDP query to the resolver and its answer back', async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    const client = createSocket('udp4');
    const answer = await new Promise<string>((resolve) => {
      client.once('message', (msg) => resolve(msg.toString()));
      client.send(Buffer.from('q-udp'), 53, relayAddress);
    });
    client.close();
    expect(answer).toBe('answer:q-udp');
  });

  it('passes length-prefixed TCP queries (two on one connection) and frames the answers', async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    const socket = connect({ host: relayAddress, port: 53 });
    const frame = (text: string) => Buffer.concat([Buffer.from([0, text.length]), Buffer.from(text)]);
    let received = Buffer.alloc(0);
    const answers = await new Promise<string[]>((resolve) => {
      socket.on('data', (chunk) => {
        received = Buffer.concat([received, chunk]);
        const found: string[] = [];
        let rest = received;
        while (rest.length >= 2 && rest.length >= 2 + rest.readUInt16BE(0)) {
          found.push(rest.subarray(2, 2 + rest.readUInt16BE(0)).toString());
          rest = rest.subarray(2 + rest.readUInt16BE(0));
        }
        if (found.length === 2) resolve(found.sort());
      });
      socket.write(Buffer.concat([frame('q-one'), frame('q-two')]));
    });
    socket.destroy();
    expect(answers).toEqual(['answer:q-one', 'answer:q-two']);
  });

  it('asks a resolver on the port it is given (SLIPWAY_SANDBOX_DNS_SERVERS `ip:port`)', async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    const upstream = createSocket('udp4');
    upstream.on('message', (query, from) =>
      upstream.send(Buffer.concat([Buffer.from('on-port:'), query]), from.port, from.address),
    );
    await new Promise<void>((resolve) => upstream.bind(0, '127.0.0.1', resolve));
    const onPort = new DnsRelay([{ host: '127.0.0.1', port: upstream.address().port }]);
    const served = loop();
    await onPort.serve(served);
    const client = createSocket('udp4');
    const answer = await new Promise<string>((resolve) => {
      client.once('message', (msg) => resolve(msg.toString()));
      client.send(Buffer.from('q-port'), 53, served);
    });
    client.close();
    upstream.close();
    await onPort.close();
    expect(answer).toBe('on-port:q-port');
  });

  it('stops answering an address it no longer serves', async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    const other = loop();
    await relay.serve(other);
    await relay.stop(other);
    const refused = await new Promise<string>((resolve) => {
      const s = connect({ host: other, port: 53 });
      s.once('connect', () => resolve('connected'));
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});

/** A DNS query for `name` (type A, RD set) with the id `id`. */
function dnsQuery(id: number, name: string): Buffer {
  const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header[2] = 0x01;
  header.writeUInt16BE(1, 4);
  return Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}

const rcodeOf = (answer: Buffer) => answer[3]! & 0x0f;

describe('DnsRelay bounds', () => {
  /**
   * A stand-in resolver that never answers names under `slow.` (an upstream that hangs: each
   * such query keeps the relay's socket open until its timeout) and answers the rest at once
   * (NOERROR, the question echoed). It counts what reached it: every query it saw is a socket
   * the relay opened.
   */
  const slowAddress = loop();
  const slow = createSocket('udp4');
  const slowTcp = createServer((socket) => socket.on('data', () => upstreamSeen.tcp++));
  const upstreamSeen = { slow: 0, fast: 0, tcp: 0 };
  const limits = { maxInflightPerSandbox: 8, maxInflight: 12, maxTcpClientsPerSandbox: 3 };
  const bounded = new DnsRelay([{ host: slowAddress, port: 53 }], limits);
  const [sandboxA, sandboxB, sandboxC] = [loop(), loop(), loop()];
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, bounded.inflight)), 1);

  beforeAll(async () => {
    if (!root) return;
    slow.on('message', (query, from) => {
      if (query.includes(Buffer.from('slow'))) return void upstreamSeen.slow++;
      upstreamSeen.fast++;
      const answer = Buffer.from(query);
      answer[2] = 0x81;
      answer[3] = 0x80;
      slow.send(answer, from.port, from.address);
    });
    await new Promise<void>((resolve) => slow.bind(53, slowAddress, resolve));
    await new Promise<void>((resolve) => slowTcp.listen(53, slowAddress, resolve));
    for (const a of [sandboxA, sandboxB, sandboxC]) await bounded.serve(a);
  });

  afterAll(async () => {
    clearInterval(sampler);
    await bounded.close();
    if (!root) return;
    slow.close();
    slowTcp.close();
  });

  /** Sends `queries` from one client socket and collects the answers that come within `waitMs`. */
  async function flood(to: string, queries: Buffer[], waitMs: number): Promise<Buffer[]> {
    const client = createSocket('udp4');
    const answers: Buffer[] = [];
    client.on('message', (msg) => answers.push(msg));
    await new Promise<void>((resolve) => client.bind(0, '127.0.0.1', resolve));
    for (const q of queries) client.send(q, 53, to);
    await new Promise((r) => setTimeout(r, waitMs));
    client.close();
    return answers;
  }

  it("answers REFUSED past one sandbox's bound, opening no socket, while another sandbox is still answered", async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    const flooded = await flood(
      sandboxA,
      Array.from({ length: 60 }, (_, i) => dnsQuery(1000 + i, `q${i}.slow.example`)),
      300,
    );
    // Exactly the bound reached the resolver; every other query was refused at once, its id and question kept.
    expect(upstreamSeen.slow).toBe(limits.maxInflightPerSandbox);
    expect(flooded).toHaveLength(60 - limits.maxInflightPerSandbox);
    for (const answer of flooded) {
      expect(rcodeOf(answer)).toBe(5);
      expect(answer[2]! & 0x80).toBe(0x80);
      const id = answer.readUInt16BE(0);
      expect(answer.subarray(12)).toEqual(dnsQuery(id, `q${id - 1000}.slow.example`).subarray(12));
    }
    // The other sandbox, meanwhile: answered by the resolver.
    const [other] = await flood(sandboxB, [dnsQuery(7, 'fine.example')], 300);
    expect(other && rcodeOf(other)).toBe(0);
    expect(other!.readUInt16BE(0)).toBe(7);
    expect(bounded.inflight).toBe(limits.maxInflightPerSandbox);
  });

  it("bounds the whole relay: once it is full, every sandbox's query is refused", async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    // B fills what the relay has left (12 - 8 = 4), then is refused too.
    const fromB = await flood(
      sandboxB,
      Array.from({ length: 10 }, (_, i) => dnsQuery(2000 + i, `b${i}.slow.example`)),
      300,
    );
    expect(fromB).toHaveLength(10 - (limits.maxInflight - limits.maxInflightPerSandbox));
    expect(upstreamSeen.slow).toBe(limits.maxInflight);
    const [fromC] = await flood(sandboxC, [dnsQuery(9, 'fine.example')], 300);
    expect(fromC && rcodeOf(fromC)).toBe(5);
    expect(peak).toBeLessThanOrEqual(limits.maxInflight);
  });

  it("counts a TCP connection's pipelined queries, and closes a sandbox's connections past its bound", async (ctx) => {
    if (!root) return ctx.skip('port 53 needs root');
    const sockets = Array.from({ length: limits.maxTcpClientsPerSandbox + 2 }, () =>
      connect({ host: sandboxC, port: 53 }),
    );
    const closed = await Promise.all(
      sockets.map(
        (s) =>
          new Promise<boolean>((resolve) => {
            s.once('close', () => resolve(true));
            s.once('error', () => undefined);
            setTimeout(() => resolve(false), 500);
          }),
      ),
    );
    expect(closed.filter(Boolean)).toHaveLength(2);
    // The relay is full (previous test): a pipelined query on an open connection is refused in its frame.
    const open = sockets[closed.indexOf(false)]!;
    const answer = await new Promise<Buffer>((resolve) => {
      let got = Buffer.alloc(0);
      open.on('data', (chunk) => {
        got = Buffer.concat([got, chunk]);
        if (got.length >= 2 && got.length >= 2 + got.readUInt16BE(0)) resolve(got.subarray(2, 2 + got.readUInt16BE(0)));
      });
      const q = dnsQuery(11, 'c.slow.example');
      open.write(Buffer.concat([Buffer.from([q.length >> 8, q.length & 255]), q]));
    });
    for (const s of sockets) s.destroy();
    expect(rcodeOf(answer)).toBe(5);
    expect(answer.readUInt16BE(0)).toBe(11);
    expect(upstreamSeen.tcp).toBe(0);
    expect(peak).toBeLessThanOrEqual(limits.maxInflight);
  });
});
