import { connect, createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { TcpRelay } from './tcp-relay.js';

describe('TcpRelay', () => {
  it('relays bytes both ways unread, and closing it cuts the relayed connection', async () => {
    const upstream = createServer((s) => s.on('data', (d) => s.write(`echo:${d.toString()}`)));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const relay = new TcpRelay({
      host: '127.0.0.1',
      port: 0,
      upstream: { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port },
    });
    await relay.listen();
    try {
      const client = connect({ host: '127.0.0.1', port: relay.port });
      // Sent before the relay has its upstream connection: nothing is lost.
      client.write('AUTH user secret\r\n');
      const first = await new Promise<string>((resolve) => client.once('data', (d) => resolve(d.toString())));
      expect(first).toBe('echo:AUTH user secret\r\n');
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      await relay.close();
      await closed;
    } finally {
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
