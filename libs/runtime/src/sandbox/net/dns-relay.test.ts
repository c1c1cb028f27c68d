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
const relay = new DnsRelay([upstreamAddress]);

beforeAll(async () => {
  if (!root) return;
  upstreamUdp.on('message', (query, from) => upstreamUdp.send(Buffer.concat([Buffer.from('answer:'), query]), from.port, from.address));
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
