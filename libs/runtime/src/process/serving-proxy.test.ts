import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ServingProxy, type ServingProxyOptions } from './serving-proxy.js';

const HOST = '127.0.0.1';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.allSettled(cleanups.splice(0).map((c) => c()));
});

/** A stand-in instance: answers its name after a short random delay, echoes POST bodies. */
async function startTarget(name: string): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () =>
      setTimeout(() => {
        const body = req.method === 'POST' ? JSON.stringify({ name, method: req.method, url: req.url, body: Buffer.concat(chunks).toString(), header: req.headers['x-test'] ?? null }) : name;
        res.writeHead(req.url?.startsWith('/created') ? 201 : 200, { 'content-type': 'text/plain', 'x-served-by': name }).end(body);
      }, Math.random() * 5),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  cleanups.push(() => new Promise((r) => server.close(r)).finally(() => server.closeAllConnections()));
  return { port: (server.address() as AddressInfo).port, server };
}

async function startProxy(options: Partial<ServingProxyOptions> = {}): Promise<{ proxy: ServingProxy; url: string }> {
  const proxy = new ServingProxy({ host: HOST, port: 0, ...options });
  await proxy.listen();
  cleanups.push(() => proxy.close(100));
  return { proxy, url: `http://${HOST}:${proxy.port}` };
}

/** A free port nobody listens on (bound and released). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

describe('ServingProxy', () => {
  it('answers 503 with a detail while it has no target, and serves once it has one', async () => {
    const { proxy, url } = await startProxy();
    const empty = await fetch(`${url}/ok`);
    expect(empty.status).toBe(503);
    expect(await empty.json()).toEqual({ detail: 'No healthy instance.' });

    const a = await startTarget('a');
    proxy.setTargets([{ host: HOST, port: a.port }]);
    const res = await fetch(`${url}/ok`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('a');

    proxy.setTargets([]);
    expect((await fetch(`${url}/ok`)).status).toBe(503);
  });

  it('forwards method, path, query, body, headers and status; spreads requests round robin', async () => {
    const { proxy, url } = await startProxy();
    const [a, b] = await Promise.all([startTarget('a'), startTarget('b')]);
    proxy.setTargets([
      { host: HOST, port: a.port },
      { host: HOST, port: b.port },
    ]);
    const res = await fetch(`${url}/created?x=1`, { method: 'POST', body: 'payload', headers: { 'x-test': 'kept' } });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ method: 'POST', url: '/created?x=1', body: 'payload', header: 'kept' });

    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add(await (await fetch(`${url}/`)).text());
    expect([...seen].sort()).toEqual(['a', 'b']);
  });

  it('retries a GET on another target when one refuses; a POST is not replayed', async () => {
    const { proxy, url } = await startProxy();
    const b = await startTarget('b');
    proxy.setTargets([
      { host: HOST, port: await deadPort() },
      { host: HOST, port: b.port },
    ]);
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${url}/`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('b');
    }
    const statuses = new Set<number>();
    for (let i = 0; i < 4; i++) statuses.add((await fetch(`${url}/`, { method: 'POST', body: 'x' })).status);
    // Round robin sends some POSTs to the dead target: those fail as 502, never silently twice.
    expect([...statuses].sort()).toEqual([200, 502]);
  });

  it('switches targets under continuous load without failing a request', async () => {
    const { proxy, url } = await startProxy();
    const [a, b] = await Promise.all([startTarget('a'), startTarget('b')]);
    proxy.setTargets([{ host: HOST, port: a.port }]);

    const results: Array<{ at: number; status: number; body: string }> = [];
    const errors: unknown[] = [];
    let switchedAt = Infinity;
    // At least 1.5 s and 150 requests (a loaded machine answers slower), at most 30 s.
    const until = Date.now() + 1_500;
    const hardStop = Date.now() + 30_000;
    const loop = async () => {
      while ((Date.now() < until || results.length < 150) && Date.now() < hardStop) {
        const at = Date.now();
        try {
          const res = await fetch(`${url}/version`);
          results.push({ at, status: res.status, body: await res.text() });
        } catch (err) {
          errors.push(err);
        }
      }
    };
    const loops = Array.from({ length: 8 }, loop);
    await new Promise((r) => setTimeout(r, 400));
    proxy.setTargets([{ host: HOST, port: b.port }]);
    switchedAt = Date.now();
    // The old instance retires as a real one does on SIGTERM after the drain: it stops
    // listening and closes its idle keep-alive connections.
    await new Promise((r) => setTimeout(r, 200));
    a.server.close();
    a.server.closeIdleConnections();
    await Promise.all(loops);

    expect(errors).toEqual([]);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.length).toBeGreaterThan(100);
    expect(results.some((r) => r.body === 'a')).toBe(true);
    expect(results.some((r) => r.body === 'b')).toBe(true);
    // Every request that started after the switch went to the new target.
    expect(results.filter((r) => r.at > switchedAt && r.body !== 'b')).toEqual([]);
  });

  it('answers a denied request itself, lets an allowed one through with what authorize left of its headers, and fails closed', async () => {
    const target = await startTarget('a');
    const { proxy, url } = await startProxy({
      authorize: async (req) => {
        if (req.headers['x-api-key'] === 'throw') throw new Error('control plane down');
        if (req.headers['x-api-key'] !== 'good') return { status: 401, detail: 'no key', headers: { 'www-authenticate': 'ApiKey' } };
        delete req.headers['x-test'];
        return null;
      },
    });
    proxy.setTargets([{ host: HOST, port: target.port }]);
    const denied = await fetch(`${url}/x`, { method: 'POST', body: 'payload' });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('ApiKey');
    expect(await denied.json()).toEqual({ detail: 'no key' });
    const allowed = await fetch(`${url}/x`, { method: 'POST', body: 'payload', headers: { 'x-api-key': 'good', 'x-test': 'secret' } });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toMatchObject({ name: 'a', body: 'payload', header: null });
    const broken = await fetch(`${url}/x`, { headers: { 'x-api-key': 'throw' } });
    expect(broken.status).toBe(503);
  });

  it('forwards an Upgrade with the headers authorize left, and tunnels only after the instance switched', async () => {
    const target = await startTarget('a');
    target.server.on('upgrade', (req, socket) => {
      if (req.url === '/refuse') return void socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\nno');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\n\r\n${JSON.stringify(req.headers)}\n`);
      socket.pipe(socket);
    });
    const { proxy } = await startProxy({
      authorize: async (req) => {
        if (req.headers['x-api-key'] !== 'good') return { status: 401, detail: 'no key', headers: { 'www-authenticate': 'ApiKey' } };
        delete req.headers['x-api-key'];
        return null;
      },
    });
    proxy.setTargets([{ host: HOST, port: target.port }]);
    const exchange = (bytes: string[]) =>
      new Promise<{ data: string; closed: boolean }>((resolve) => {
        const socket = connect(proxy.port, HOST);
        let data = '';
        const done = (closed: boolean) => resolve({ data, closed });
        const timer = setTimeout(() => (socket.destroy(), done(false)), 1_000);
        socket.on('data', (c) => (data += c));
        socket.on('end', () => (clearTimeout(timer), socket.destroy(), done(true)));
        socket.on('error', () => undefined);
        socket.on('connect', () => bytes.forEach((b, i) => setTimeout(() => socket.writable && socket.write(b), i * 200)));
      });
    const upgrade = (path: string, key?: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${key ? `X-Api-Key: ${key}\r\n` : ''}Connection: Upgrade\r\nUpgrade: echo\r\n\r\n`;

    const denied = await exchange([upgrade('/ws'), 'GET /next HTTP/1.1\r\nHost: x\r\n\r\n']);
    expect(denied.closed).toBe(true);
    expect(denied.data).toMatch(/^HTTP\/1\.1 401 /);
    expect(denied.data).toContain('www-authenticate: ApiKey');
    expect(denied.data.match(/HTTP\/1\.1/g)).toHaveLength(1);

    const switched = await exchange([upgrade('/ws', 'good'), 'echoed']);
    expect(switched.data).toMatch(/^HTTP\/1\.1 101 /);
    expect(switched.data).not.toContain('good');
    expect(switched.data).toContain('"x-forwarded-for"');
    expect(switched.data).toContain('echoed');

    const refused = await exchange([upgrade('/refuse', 'good'), 'GET /next HTTP/1.1\r\nHost: x\r\n\r\n']);
    expect(refused.closed).toBe(true);
    expect(refused.data).toMatch(/^HTTP\/1\.1 400 /);
    expect(refused.data.match(/HTTP\/1\.1/g)).toHaveLength(1);
  });
});
