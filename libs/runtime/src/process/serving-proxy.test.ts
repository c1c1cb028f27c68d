import { createServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
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
        const body =
          req.method === 'POST'
            ? JSON.stringify({
                name,
                method: req.method,
                url: req.url,
                body: Buffer.concat(chunks).toString(),
                header: req.headers['x-test'] ?? null,
              })
            : name;
        res
          .writeHead(req.url?.startsWith('/created') ? 201 : 200, { 'content-type': 'text/plain', 'x-served-by': name })
          .end(body);
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

/** Writes `text` on a new connection to `port` and resolves with all it was answered once the connection closes. */
function rawExchange(port: number, text: string): Promise<string> {
  const socket = connect(port, HOST);
  let answer = '';
  socket.on('data', (b) => (answer += b.toString()));
  socket.write(text);
  return new Promise((resolve) => socket.once('close', () => resolve(answer)));
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

  it('gives a client its request timeout to send a request, and a streamed answer all the time it takes', async () => {
    // Once the whole request arrived, an answer streamed for longer than the proxy's request timeout.
    const instance = createServer(async (req, res) => {
      try {
        for await (const _ of req);
      } catch {
        return; // the proxy gave up on the request (its client's time ran out)
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = setInterval(() => {
        res.write(`data: ${n}\n\n`);
        if (++n === 6) {
          clearInterval(tick);
          res.end();
        }
      }, 150);
    });
    await new Promise<void>((resolve) => instance.listen(0, HOST, resolve));
    cleanups.push(() => new Promise((r) => instance.close(r)).finally(() => instance.closeAllConnections()));
    const { proxy, url } = await startProxy({ requestTimeoutMs: 400 });
    proxy.setTargets([{ host: HOST, port: (instance.address() as AddressInfo).port }]);
    const streamed = await (await fetch(`${url}/stream`)).text();
    expect(streamed.match(/^data: /gm)).toHaveLength(6);
    // A head, part of the body it announced, then silence: answered 408 and closed, not held.
    const answer = await rawExchange(
      proxy.port,
      'POST /upload HTTP/1.1\r\nHost: app\r\nContent-Length: 1000\r\n\r\nxx',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("answers 502 when an instance switches protocols on a plain request, and keeps a client's Host whatever Connection names", async () => {
    // An instance that answers 101 to anything, then one echoing the Host it got.
    const switching = createTcpServer((s) => {
      s.once('data', () => s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n'));
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => switching.listen(0, HOST, resolve));
    cleanups.push(() => new Promise((r) => switching.close(r)));
    const errors: Error[] = [];
    const { proxy, url } = await startProxy({ onError: (err) => errors.push(err) });
    proxy.setTargets([{ host: HOST, port: (switching.address() as AddressInfo).port }]);
    const res = await fetch(`${url}/plain`);
    expect(res.status).toBe(502);
    expect(errors.map((e) => e.message)).toContain(
      'the instance switched protocols on a request that asked for no upgrade',
    );

    const echo = createServer((req, res) => res.end(req.headers.host));
    await new Promise<void>((resolve) => echo.listen(0, HOST, resolve));
    cleanups.push(() => new Promise((r) => echo.close(r)).finally(() => echo.closeAllConnections()));
    proxy.setTargets([{ host: HOST, port: (echo.address() as AddressInfo).port }]);
    const answer = await rawExchange(
      proxy.port,
      'GET / HTTP/1.1\r\nHost: app.example\r\nConnection: close, host\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.endsWith('\r\n\r\napp.example')).toBe(true);
  });

  it('answers a denied request itself, lets an allowed one through with what authorize left of its headers, and fails closed', async () => {
    const target = await startTarget('a');
    const { proxy, url } = await startProxy({
      authorize: async (req) => {
        if (req.headers['x-api-key'] === 'throw') throw new Error('control plane down');
        if (req.headers['x-api-key'] !== 'good')
          return { status: 401, detail: 'no key', headers: { 'www-authenticate': 'ApiKey' } };
        delete req.headers['x-test'];
        return null;
      },
    });
    proxy.setTargets([{ host: HOST, port: target.port }]);
    const denied = await fetch(`${url}/x`, { method: 'POST', body: 'payload' });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('ApiKey');
    expect(await denied.json()).toEqual({ detail: 'no key' });
    const allowed = await fetch(`${url}/x`, {
      method: 'POST',
      body: 'payload',
      headers: { 'x-api-key': 'good', 'x-test': 'secret' },
    });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toMatchObject({ name: 'a', body: 'payload', header: null });
    const broken = await fetch(`${url}/x`, { headers: { 'x-api-key': 'throw' } });
    expect(broken.status).toBe(503);
  });

  it('forwards an Upgrade with the headers authorize left, and tunnels only after the instance switched', async () => {
    const target = await startTarget('a');
    target.server.on('upgrade', (req, socket) => {
      if (req.url === '/refuse') return void socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\nno');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\n\r\n${JSON.stringify(req.headers)}\n`,
      );
      socket.pipe(socket);
    });
    const { proxy } = await startProxy({
      authorize: async (req) => {
        if (req.headers['x-api-key'] !== 'good')
          return { status: 401, detail: 'no key', headers: { 'www-authenticate': 'ApiKey' } };
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
        socket.on('connect', () =>
          bytes.forEach((b, i) => setTimeout(() => socket.writable && socket.write(b), i * 200)),
        );
      });
    const upgrade = (path: string, key?: string) =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\n${key ? `X-Api-Key: ${key}\r\n` : ''}Connection: Upgrade\r\nUpgrade: echo\r\n\r\n`;

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

  it('answers a refused HEAD Upgrade with its head alone, and a proxy in front relays that one answer', async () => {
    // The edge forwards Upgrades to a serving proxy: a refusal's body after a HEAD's head was read
    // by the edge as a second answer, which failed, and the edge then wrote a 502 after the 429.
    const { proxy: inner } = await startProxy({
      authorize: async () => ({ status: 429, detail: 'slow down', headers: { 'retry-after': '1' } }),
    });
    const { proxy: outer } = await startProxy();
    outer.setTargets([{ host: HOST, port: inner.port }]);
    const headUpgrade = 'HEAD /ok HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
    for (const port of [inner.port, outer.port]) {
      const answer = await new Promise<string>((resolve) => {
        const socket = connect(port, HOST, () => socket.write(headUpgrade));
        let data = '';
        socket.on('data', (c) => (data += c));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(data));
        setTimeout(() => socket.destroy(), 2_000);
      });
      expect(answer, `port ${port === inner.port ? 'inner' : 'outer'}`).toMatch(/^HTTP\/1\.1 429 /);
      expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toHaveLength(1);
      expect(answer.endsWith('\r\n\r\n'), answer).toBe(true);
    }
    // A GET Upgrade's refusal keeps its body.
    const got = await new Promise<string>((resolve) => {
      const socket = connect(outer.port, HOST, () => socket.write(headUpgrade.replace('HEAD', 'GET')));
      let data = '';
      socket.on('data', (c) => (data += c));
      socket.on('close', () => resolve(data));
    });
    expect(got).toMatch(/^HTTP\/1\.1 429 [^]*\r\n\r\n\{"detail":"slow down"\}$/);
  });

  describe('requests that are malformed but legal, or hostile', () => {
    /** Sends raw bytes (each piece as its own packet) and reads until the proxy closes or a pause. */
    const raw = (port: number, pieces: string[], waitMs = 600) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, HOST);
        let data = '';
        const timer = setTimeout(() => (socket.destroy(), resolve(data)), waitMs);
        socket.on('data', (c) => (data += c));
        socket.on('close', () => (clearTimeout(timer), resolve(data)));
        socket.on('error', () => undefined);
        socket.on('connect', () =>
          pieces.forEach((p, i) => setTimeout(() => socket.writable && socket.write(p, 'latin1'), i * 20)),
        );
      });

    /** A target that answers each request with what reached it, and switches Upgrades to an echo. */
    async function echoTarget(): Promise<number> {
      const server = createServer((req, res) => {
        const body = JSON.stringify({ url: req.url, headers: req.headers });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      });
      server.on('upgrade', (req, socket) => {
        socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\n\r\n');
        socket.write(JSON.stringify({ url: req.url, headers: req.headers }) + '\n');
        socket.pipe(socket);
      });
      await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
      cleanups.push(() => new Promise((r) => server.close(r)).finally(() => server.closeAllConnections()));
      return (server.address() as AddressInfo).port;
    }

    const statusOf = (answer: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
    /** The first JSON document of an answer's body (one chunk when chunked). */
    const bodyOf = (answer: string) => {
      const [head, body] = [answer.slice(0, answer.indexOf('\r\n\r\n')), answer.slice(answer.indexOf('\r\n\r\n') + 4)];
      return JSON.parse((/transfer-encoding: chunked/i.test(head) ? body.split('\r\n')[1]! : body).split('\n')[0]!);
    };

    it('answers every shape of request line and Host, and keeps serving (no process-wide failure)', async () => {
      const faults: Error[] = [];
      const { proxy } = await startProxy({ onFault: (err) => faults.push(err) });
      proxy.setTargets([{ host: HOST, port: await echoTarget() }]);

      // HTTP/1.0 without Host: the request that used to end the process.
      const noHost = await raw(proxy.port, ['GET /ok HTTP/1.0\r\n\r\n']);
      expect(statusOf(noHost)).toBe(200);
      expect(bodyOf(noHost).headers).not.toHaveProperty('x-forwarded-host');
      // The same as an Upgrade.
      const upgradeNoHost = await raw(proxy.port, ['GET /ws HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n']);
      expect(statusOf(upgradeNoHost)).toBe(101);
      expect(bodyOf(upgradeNoHost).headers).not.toHaveProperty('x-forwarded-host');
      // An empty Host, and several.
      expect(statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost:\r\n\r\n']))).toBeLessThan(500);
      expect(statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n']))).toBe(400);
      // The absolute form reaches the instance as a path.
      const absolute = await raw(proxy.port, ['GET http://elsewhere.example/a/b?c=1 HTTP/1.1\r\nHost: x\r\n\r\n']);
      expect(statusOf(absolute)).toBe(200);
      expect(bodyOf(absolute).url).toBe('/a/b?c=1');
      expect(statusOf(await raw(proxy.port, ['GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n']))).toBe(400);
      // OPTIONS * is forwarded; CONNECT is refused.
      expect(statusOf(await raw(proxy.port, ['OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n']))).toBe(200);
      expect(statusOf(await raw(proxy.port, ['CONNECT 127.0.0.1:5432 HTTP/1.1\r\nHost: 127.0.0.1:5432\r\n\r\n']))).toBe(
        405,
      );
      // Control bytes in headers are refused by the parser; obs-text is passed on as sent.
      expect(statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: a\x01b\r\n\r\n']))).toBe(
        400,
      );
      expect(
        statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: caf\xe9\r\n\r\n'])),
      ).toBe(200);
      // A request cut short, and a body that never ends: the connection goes, nothing else.
      await raw(proxy.port, ['GET /ok HTT'], 100);
      await raw(proxy.port, ['POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc'], 100);

      expect(faults).toEqual([]);
      expect(statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: x\r\n\r\n']))).toBe(200);
    });

    it('answers 502 for an instance answer Node cannot relay, and keeps serving', async () => {
      const accepted = new Set<import('node:net').Socket>();
      const bad = createTcpServer((socket) => {
        accepted.add(socket);
        socket.on('error', () => undefined).end('HTTP/1.1 000 Nope\r\ncontent-length: 0\r\n\r\n');
      });
      await new Promise<void>((resolve) => bad.listen(0, HOST, resolve));
      cleanups.push(() => new Promise((r) => (bad.close(r), accepted.forEach((s) => s.destroy()))));
      const errors: Error[] = [];
      const { proxy } = await startProxy({ onError: (err) => errors.push(err) });
      proxy.setTargets([{ host: HOST, port: (bad.address() as AddressInfo).port }]);
      const answer = await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: x\r\n\r\n']);
      expect(statusOf(answer)).toBe(502);
      expect(bodyOf(answer).detail).toMatch(/cannot be relayed/);
      expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/status code/i)]);
      proxy.setTargets([{ host: HOST, port: await echoTarget() }]);
      expect(statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: x\r\n\r\n']))).toBe(200);
    });

    it('answers a request whose handling throws with 400/502 and reports it, instead of failing the process', async () => {
      const faults: Error[] = [];
      // An authorize hook that leaves a target Node refuses to send: forwarding throws.
      const { proxy } = await startProxy({
        onFault: (err) => faults.push(err),
        authorize: async (req) => {
          if (req.url === '/break') req.url = '/a b';
          return null;
        },
      });
      proxy.setTargets([{ host: HOST, port: await echoTarget() }]);
      const answer = await raw(proxy.port, ['GET /break HTTP/1.1\r\nHost: x\r\n\r\n']);
      expect(statusOf(answer)).toBe(400);
      expect(bodyOf(answer).detail).toMatch(/cannot be passed on/);
      expect(faults.map((f) => (f as NodeJS.ErrnoException).code)).toEqual(['ERR_UNESCAPED_CHARACTERS']);
      expect(statusOf(await raw(proxy.port, ['GET /ok HTTP/1.1\r\nHost: x\r\n\r\n']))).toBe(200);
    });
  });
});
