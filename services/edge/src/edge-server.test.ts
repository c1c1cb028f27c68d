import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DataSource } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeServer, type EdgeServerOptions } from './edge-server.js';
import { RouteTable } from './route-table.js';

// One EdgeServer in front of a stand-in serving proxy that echoes the headers it got; the route is
// applied to the table as a read from Postgres would (test/e2e/edge.test.ts runs the whole edge).
const log = createLogger({ name: 'edge-test', level: 'silent' });
const upstream = createServer((req, res) => res.end(JSON.stringify(req.headers)));
const routes = new RouteTable(null as unknown as DataSource, '127.0.0.1', '127.0.0.1', log);
let edge: EdgeServer;
/** An edge listener on a free port in front of `routes`, with `options` of its own. */
const edgeWith = (options: Partial<EdgeServerOptions>) =>
  new EdgeServer({ host: '127.0.0.1', port: 0, appsDomain: 'apps.test', routes, token: 'edge-token', log, ...options });

beforeAll(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  routes.apply('d', {
    deploymentId: 'd',
    edgeName: 'shop',
    servingPort: (upstream.address() as AddressInfo).port,
    hosts: [],
  });
  edge = edgeWith({});
  await edge.listen();
});
afterAll(async () => {
  await edge.close(100);
  routes.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

function exchange(port: number, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.once('error', reject);
    req.end();
  });
}
const send = async (headers: Record<string, string>): Promise<IncomingHttpHeaders> =>
  JSON.parse((await exchange(edge.port, headers)).body);

describe('EdgeServer', () => {
  it("states the client's address and scheme itself: what a client claims in any forwarding header does not reach the app", async () => {
    const got = await send({
      host: 'shop.apps.test',
      'x-forwarded-for': '6.6.6.6',
      'x-forwarded-proto': 'https',
      forwarded: 'for=6.6.6.6;proto=https',
      'x-real-ip': '6.6.6.6',
      'x-forwarded-port': '443',
      'x-forwarded-prefix': '/admin',
    });
    expect(got['x-forwarded-for']).toBe('127.0.0.1');
    expect(got['x-forwarded-proto']).toBe('http');
    expect(got['x-forwarded-host']).toBe('shop.apps.test');
    for (const name of ['forwarded', 'x-real-ip', 'x-forwarded-port', 'x-forwarded-prefix'])
      expect(got[name], name).toBeUndefined();
  });

  it("forwards the client's Host even when its Connection header names it", async () => {
    const got = await send({ host: 'shop.apps.test', connection: 'host' });
    expect(got.host).toBe('shop.apps.test');
  });

  it('sends a plain request for a host with a certificate to HTTPS, unless a trusted proxy says it came over HTTPS', async () => {
    const plain = (trustProxy: boolean) =>
      edgeWith({ redirectToHttpsPort: 8443, hasCertificate: async () => true, trustProxy });
    for (const trustProxy of [true, false]) {
      const server = plain(trustProxy);
      await server.listen();
      try {
        expect((await exchange(server.port, { host: 'shop.apps.test' })).status).toBe(308);
        const behindTls = await exchange(server.port, { host: 'shop.apps.test', 'x-forwarded-proto': 'https' });
        expect(behindTls.status, `trustProxy ${trustProxy}`).toBe(trustProxy ? 200 : 308);
      } finally {
        await server.close(100);
      }
    }
  });

  it('answers ACME challenges for the hosts it routes only: a challenge for another host is not looked up', async () => {
    const asked: string[] = [];
    const server = edgeWith({
      answerChallenge: async (req, res) => {
        if (!req.url?.startsWith('/.well-known/acme-challenge/')) return false;
        asked.push(String(req.headers.host));
        res.end('key-authorization');
        return true;
      },
    });
    await server.listen();
    const challenge = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port: server.port, path: '/.well-known/acme-challenge/abc', headers: { host } },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.once('error', reject);
        req.end();
      });
    try {
      expect(await challenge('random-1.example.com')).toBe(404);
      expect(await challenge('nobody.apps.test')).toBe(404);
      expect(asked).toEqual([]);
      expect(await challenge('shop.apps.test')).toBe(200);
      expect(asked).toEqual(['shop.apps.test']);
    } finally {
      await server.close(100);
    }
  });
});
