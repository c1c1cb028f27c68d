import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RouteSpec } from '@slipway/api/app';
import { generateApiKey } from '@slipway/crypto';
import { createDataSource } from '@slipway/db';
import type { HttpClient } from '../support/http.js';
import type { LogCapture } from '../support/log-capture.js';
import { MAX_REPORTED_ISSUES } from '@slipway/domain';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startReplica, startTestApi, type Replica, type TestApi } from '../support/test-api.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SECRET = 'secret internals xyz';

/** pino-http writes its line when the response finishes, which can be just after the client reads it. */
async function logLineFor(
  logs: LogCapture,
  requestId: string,
  match: (line: any) => boolean = () => true,
): Promise<any> {
  return vi.waitFor(
    () => {
      const line = logs.lines().find((l: any) => l.req?.id === requestId && match(l));
      if (!line) throw new Error(`no log line for request ${requestId}`);
      return line;
    },
    { timeout: 2_000, interval: 20 },
  );
}

const listenerBody = (computeId: string, extra: Record<string, unknown> = {}) => ({
  compute_type: 'k8s',
  compute_id: computeId,
  compute_config: { k8s_namespaces: ['default'] },
  ...extra,
});

let api: TestApi;
let small: TestApi;

beforeAll(async () => {
  [api, small] = await Promise.all([startTestApi(), startTestApi({ SLIPWAY_BODY_LIMIT_BYTES: '2048' })]);
});
afterAll(async () => {
  await Promise.all([api?.close(), small?.close()]);
});

describe('unknown routes and methods', () => {
  it.each([
    '/nope',
    '/api-host/nope',
    '/v2/nothing-here',
    '/api-host/v2/nothing-here',
    '/v2/listeners/a/b',
    '/api-hostx/healthz',
  ])('%s answers 404 Not Found, with or without a key', async (path) => {
    for (const key of [api.adminKey, null]) {
      const res = await api.http.get(path, { key });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Not Found' });
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('x-request-id')).toMatch(UUID);
    }
  });

  it.each([
    ['DELETE', '/v2/listeners', 'GET HEAD POST'],
    ['PUT', '/api-host/v2/listeners/', 'GET HEAD POST'],
    ['POST', '/healthz', 'GET HEAD'],
    ['PATCH', '/api-host/v2/api-keys', 'GET HEAD POST'],
    ['POST', `/v2/listeners/${randomUUID()}`, 'DELETE GET HEAD PATCH PUT'],
    ['PUT', `/v2/auth/providers/some-provider`, 'DELETE GET HEAD PATCH'],
  ])('%s %s answers 405 with Allow: %s', async (method, path, allow) => {
    const res = await api.http.request(method, path, { key: null });
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ detail: 'Method Not Allowed' });
    const allowed = res.headers
      .get('allow')
      ?.split(',')
      .map((m) => m.trim())
      .sort()
      .join(' ');
    expect(allowed).toBe(allow);
  });

  it('still routes the allowed methods of a path that answered 405', async () => {
    expect((await api.http.get('/v2/listeners')).status).toBe(200);
    expect((await api.http.request('HEAD', '/healthz')).status).toBe(200);
  });
});

describe('malformed JSON', () => {
  it.each([
    ['POST', '/v2/listeners', 'application/json'],
    ['POST', '/api-host/v2/api-keys', 'application/json'],
    ['PATCH', `/v2/listeners/${randomUUID()}`, 'application/merge-patch+json'],
  ])('%s %s (%s) answers 422 json_invalid', async (method, path, type) => {
    const res = await api.http.request(method, path, {
      rawBody: '{"compute_type": ',
      headers: { 'content-type': type },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] });
  });
});

describe('422 with thousands of wrong items', () => {
  it('lists the first MAX_REPORTED_ISSUES problems, in order, in an answer far smaller than all of them', async () => {
    const body = { url: 'https://hooks.example.com/in', event_types: Array.from({ length: 3_000 }, (_, i) => i) };
    const res = await api.http.post('/v2/webhooks', body);
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(MAX_REPORTED_ISSUES);
    expect(res.body.detail[0].loc).toEqual(['body', 'event_types', 0]);
    // Every item has two problems (not a string, not an event type): 6,000 issues, ~870 KB in all.
    expect(res.text.length).toBeLessThan(30_000);
    expect(await api.dataSource.query(`SELECT 1 FROM outbound_webhooks WHERE url = $1`, [body.url])).toEqual([]);
  });
});

describe('body size limit', () => {
  it('answers 413 with a detail over SLIPWAY_BODY_LIMIT_BYTES and writes nothing', async () => {
    const namespaces = Array.from({ length: 200 }, (_, i) => `namespace-${i}`);
    const body = listenerBody('too-big', { compute_config: { k8s_namespaces: namespaces } });
    expect(JSON.stringify(body).length).toBeGreaterThan(2048);
    for (const path of ['/v2/listeners', '/api-host/v2/listeners']) {
      const res = await small.http.post(path, body);
      expect(res.status, path).toBe(413);
      expect(res.body).toEqual({ detail: expect.stringContaining('2048') });
      expect(Object.keys(res.body)).toEqual(['detail']);
    }
    const [{ count }] = await small.dataSource.query(
      `SELECT count(*)::int AS count FROM listeners WHERE compute_id = 'too-big'`,
    );
    expect(count).toBe(0);
  });

  it('accepts a body just under the limit', async () => {
    const namespaces: string[] = [];
    const body = listenerBody('just-fits', { compute_config: { k8s_namespaces: namespaces } });
    while (Buffer.byteLength(JSON.stringify(body)) < 2048 - 20) namespaces.push(`ns-${namespaces.length}`);
    const size = Buffer.byteLength(JSON.stringify(body));
    expect(size).toBeGreaterThan(2000);
    expect(size).toBeLessThanOrEqual(2048);
    expect((await small.http.post('/v2/listeners', body)).status).toBe(201);
  });

  it('keeps the default limit (1 MiB) elsewhere', async () => {
    expect(api.config.bodyLimitBytes).toBe(1024 * 1024);
    const namespaces = Array.from({ length: 200 }, (_, i) => `namespace-${i}`);
    expect(
      (
        await api.http.post(
          '/v2/listeners',
          listenerBody('default-limit', { compute_config: { k8s_namespaces: namespaces } }),
        )
      ).status,
    ).toBe(201);
  });
});

describe('X-Request-Id', () => {
  it('echoes a given id and logs the request under it', async () => {
    const id = `trace-${randomBytes(4).toString('hex')}.A_b:9`;
    const res = await api.http.get('/v2/listeners', { headers: { 'X-Request-Id': id } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(id);
    const line = await logLineFor(api.logs, id);
    expect(line).toMatchObject({
      req: { id, method: 'GET', url: '/v2/listeners' },
      res: { statusCode: 200 },
      level: 'info',
      msg: 'request completed',
    });
    expect(line.responseTime).toEqual(expect.any(Number));
  });

  it('logs no line for probes, one for anything else', async () => {
    for (const path of ['/healthz', '/readyz'])
      expect((await api.http.get(path, { headers: { 'X-Request-Id': `probe${path.replace('/', '-')}` } })).status).toBe(
        200,
      );
    await api.http.get('/v2/listeners', { headers: { 'X-Request-Id': 'after-probes' } });
    await logLineFor(api.logs, 'after-probes');
    expect(api.logs.lines().filter((l: any) => /^probe-/.test(l.req?.id ?? ''))).toEqual([]);
  });

  it('generates a UUID when none is given, and logs that one', async () => {
    const res = await api.http.get('/v2/listeners');
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(UUID);
    expect((await logLineFor(api.logs, id)).res.statusCode).toBe(200);
  });

  it.each([
    ['spaces', 'has spaces in it'],
    ['markup', '<script>alert(1)</script>'],
    ['too long', 'a'.repeat(129)],
    ['quotes', 'x"y'],
  ])('replaces an unsafe id (%s) with a UUID and never logs it', async (_, given) => {
    const res = await api.http.get('/v2/listeners', { headers: { 'X-Request-Id': given } });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(UUID);
    await logLineFor(api.logs, id);
    expect(api.logs.text()).not.toContain(given);
  });

  it('is set on error responses too', async () => {
    const res = await api.http.get('/v2/listeners', { key: null, headers: { 'X-Request-Id': 'unauth-1' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBe('unauth-1');
    expect(await logLineFor(api.logs, 'unauth-1')).toMatchObject({ level: 'warn', res: { statusCode: 401 } });
  });
});

describe('credentials never reach the log', () => {
  it('keeps X-Api-Key, Bearer tokens, wrong keys and newly created keys out of the log', async () => {
    const wrongKey = `slw_test_${randomBytes(24).toString('base64url')}`;
    const ids: string[] = [];
    const send = async (
      method: string,
      path: string,
      options: Parameters<HttpClient['request']>[2],
      status: number,
    ) => {
      const id = `creds-${ids.length}`;
      ids.push(id);
      const res = await api.http.request(method, path, {
        ...options,
        headers: { ...options?.headers, 'X-Request-Id': id },
      });
      expect(res.status, `${method} ${path} (${id})`).toBe(status);
      return res;
    };

    await send('GET', '/v2/listeners', {}, 200);
    await send('GET', '/v2/listeners', { key: null, headers: { Authorization: `Bearer ${api.adminKey}` } }, 200);
    await send(
      'POST',
      '/v2/listeners',
      { key: null, headers: { Authorization: `Bearer ${api.adminKey}` }, body: listenerBody('bearer') },
      201,
    );
    await send('GET', '/v2/listeners', { key: wrongKey }, 401);
    await send('GET', '/v2/listeners', { key: null, headers: { Authorization: `Bearer ${wrongKey}` } }, 401);
    await send('GET', '/v2/listeners', { headers: { 'X-Tenant-Id': 'not-a-uuid' } }, 422);
    const created = await send(
      'POST',
      '/v2/api-keys',
      { body: { description: 'log test', scope: 'workspace', role: 'member' } },
      201,
    );
    const newKey: string = created.body.key;
    expect(newKey.length).toBeGreaterThanOrEqual(32);
    await send('GET', '/v2/listeners', { key: newKey }, 200);

    // Absence only means something once every one of those requests has been logged.
    for (const id of ids) await logLineFor(api.logs, id);
    const text = api.logs.text();
    expect(text).toContain(ids[0]);
    for (const secret of [api.adminKey, wrongKey, newKey]) expect(text).not.toContain(secret);
  });
});

describe('500: bugs answer a fixed text and log the stack', () => {
  let app: Replica;
  const boom = (path: string, handler: RouteSpec['handler']): RouteSpec => ({
    method: 'get',
    path,
    operationId: path.replaceAll('/', '_'),
    summary: 'Throws',
    tag: 'Test',
    auth: 'none',
    responses: { 200: { description: 'Never' } },
    handler,
  });

  beforeAll(async () => {
    app = await startReplica(api, {
      extraRoutes: [
        boom('/test/boom', async () => {
          throw new Error(SECRET);
        }),
        boom('/test/boom-sync', () => {
          throw new TypeError(`${SECRET} (sync)`);
        }),
        boom('/test/reject-string', () => Promise.reject(`${SECRET} (string)`)),
        {
          ...boom('/test/boom-authed', async () => {
            throw new Error(`${SECRET} (authed)`);
          }),
          auth: 'workspace',
        },
      ],
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  it.each(['/test/boom', '/api-host/test/boom', '/test/boom-sync', '/test/reject-string', '/test/boom-authed'])(
    '%s answers exactly 500 {"detail":"Internal server error."}',
    async (path) => {
      const res = await app.http.get(path);
      expect(res.status).toBe(500);
      expect(res.text).toBe('{"detail":"Internal server error."}');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.text).not.toContain(SECRET);
      for (const [, value] of res.headers) expect(value).not.toContain(SECRET);
      expect(res.headers.get('x-request-id')).toMatch(UUID);
    },
  );

  it('logs the message and stack under the request id', async () => {
    const res = await app.http.get('/test/boom', { headers: { 'X-Request-Id': 'boom-1' } });
    expect(res.status).toBe(500);
    const line = await logLineFor(app.logs, 'boom-1', (l) => l.err);
    expect(line).toMatchObject({ level: 'error', err: { type: 'Error', message: SECRET } });
    expect(line.err.stack).toContain(SECRET);
    expect(line.err.stack).toMatch(/\n\s+at /);
    // And pino-http's own line for the request records the 500.
    expect(await logLineFor(app.logs, 'boom-1', (l) => l.res?.statusCode === 500)).toMatchObject({ level: 'error' });
  });

  it('mounts extraRoutes like the built-ins: documented, and 405 on other methods', async () => {
    const doc = (await app.http.get('/openapi.json')).body;
    expect(doc.paths['/test/boom']).toHaveProperty('get');
    expect((await app.http.request('POST', '/test/boom')).status).toBe(405);
  });
});

describe('503: a dependency is down', () => {
  /** An app whose own DataSource reaches the test database through a faulty proxy. */
  async function appBehindProxy(): Promise<{ app: Replica; proxy: TcpProxy; close: () => Promise<void> }> {
    const proxy = await TcpProxy.start(api.database.url, 5432);
    const dataSource = createDataSource({
      url: proxy.urlFor(api.database.url),
      applicationName: 'slipway-test-outage',
      poolSize: 2,
    });
    await dataSource.initialize();
    const app = await startReplica(api, { dataSource });
    expect((await app.http.get('/readyz')).status).toBe(200);
    expect((await app.http.get('/v2/listeners')).status).toBe(200);
    return {
      app,
      proxy,
      close: async () => {
        await app.close();
        await proxy.refuse();
        await dataSource.destroy().catch(() => {});
      },
    };
  }

  let app: Replica;
  let closeOutage: () => Promise<void>;

  beforeAll(async () => {
    const outage = await appBehindProxy();
    ({ app, close: closeOutage } = outage);
    await outage.proxy.refuse();
  });
  afterAll(async () => {
    await closeOutage?.();
  });

  it('/readyz answers 503 not ready, and names Postgres in the log only', async () => {
    const res = await app.http.get('/readyz', { key: null });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'unavailable' });
    const line = app.logs.lines().find((l: any) => /^not ready/.test(String(l.msg)));
    expect(line).toMatchObject({
      level: 'error',
      msg: 'not ready: Postgres unreachable',
      checks: { postgres: 'unreachable', redis: 'ok' },
    });
  });

  it('an authenticated route answers 503 (not 500), with Retry-After, and writes nothing', async () => {
    for (const [method, path, body] of [
      ['GET', '/v2/listeners', undefined],
      ['POST', '/v2/listeners', listenerBody('during-outage')],
      ['GET', '/api-host/v2/auth/providers', undefined],
    ] as const) {
      const res = await app.http.request(method, path, {
        body,
        headers: { 'X-Request-Id': `outage-${method}-${path.length}` },
      });
      expect(res.status, `${method} ${path}`).toBe(503);
      expect(res.body).toEqual({ detail: expect.any(String) });
      expect(res.body.detail).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    const line = await logLineFor(app.logs, `outage-GET-${'/v2/listeners'.length}`, (l) => l.err);
    expect(line).toMatchObject({ level: 'error', msg: 'database unavailable', err: { code: 'ECONNREFUSED' } });
    const [{ count }] = await api.dataSource.query(
      `SELECT count(*)::int AS count FROM listeners WHERE compute_id = 'during-outage'`,
    );
    expect(count).toBe(0);
  });

  it('routes that need no database keep answering', async () => {
    expect((await app.http.get('/healthz')).status).toBe(200);
    expect((await app.http.get('/openapi.json')).status).toBe(200);
    // A probe with a credential that cannot be looked up now (never seen, so never cached)
    // answers as to an anonymous caller, not 503.
    expect((await app.http.get('/healthz', { key: generateApiKey().key })).status).toBe(200);
    expect((await app.http.get('/readyz', { key: generateApiKey().key })).status).toBe(503);
  });

  it('answers 503 when Postgres stops answering (connect timeout), not 500', async () => {
    const outage = await appBehindProxy();
    try {
      outage.proxy.stall();
      // Let the pool see its idle connections drop, so the request has to open a new one.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      const res = await outage.app.http.get('/v2/listeners', { headers: { 'X-Request-Id': 'stalled-1' } });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ detail: expect.any(String) });
      // Bounded by the pool's connect timeout (5 s), not by the client giving up.
      expect(Date.now() - started).toBeLessThan(15_000);
      const line = await logLineFor(outage.app.logs, 'stalled-1', (l) => l.err);
      expect(line).toMatchObject({ msg: 'database unavailable', err: { message: expect.stringMatching(/timeout/i) } });
    } finally {
      await outage.close();
    }
  });
});

describe('/readyz: not ready only when writes cannot be accepted', () => {
  it('stays ready but degraded when only Redis is down (the outbox absorbs it), and says so in /metrics', async () => {
    const app = await startReplica(api, { redisUrl: 'redis://127.0.0.1:1/0' });
    try {
      const res = await app.http.get('/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'degraded', checks: { postgres: 'ok', redis: 'unreachable' } });
      const metrics = await app.http.get('/metrics', { key: null });
      expect(metrics.text).toMatch(/^slipway_dependency_up\{dependency="redis"\} 0$/m);
      expect(metrics.text).toMatch(/^slipway_dependency_up\{dependency="postgres"\} 1$/m);
    } finally {
      await app.close();
    }
  });

  it('is not ready, naming both, when Postgres (closed port, pool never connected) and Redis are down', async () => {
    const dataSource = createDataSource({ url: 'postgres://postgres@127.0.0.1:1/x', poolSize: 1 });
    await expect(dataSource.initialize()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const app = await startReplica(api, { dataSource, redisUrl: 'redis://127.0.0.1:1/0' });
    try {
      const res = await app.http.get('/readyz', { key: null });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'unavailable' });
      expect(app.logs.lines().some((l: any) => l.msg === 'not ready: Postgres and Redis unreachable')).toBe(true);
    } finally {
      await app.close();
    }
  });
});

describe('probes', () => {
  it.each(['', '/api-host'])('%s/healthz and /readyz answer 200 without a key', async (prefix) => {
    const health = await api.http.get(`${prefix}/healthz`, { key: null });
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await api.http.get(`${prefix}/readyz`, { key: null });
    expect(ready.status).toBe(200);
    // Anonymous callers learn ready or not, nothing about what runs behind.
    expect(ready.body).toEqual({ status: 'ok' });
  });

  it('/readyz shows its checks and details to an admin only', async () => {
    const admin = await api.http.get('/readyz');
    expect(admin.status).toBe(200);
    expect(admin.body).toMatchObject({
      status: 'ok',
      checks: { postgres: 'ok', redis: 'ok' },
      details: { data_access: expect.any(Object) },
    });
    const member = await api.http.get('/readyz', { key: await api.mintKey({ role: 'member' }) });
    expect(member.body).toEqual({ status: 'ok' });
    const orgMember = await api.http.get('/readyz', {
      key: await api.mintKey({ role: 'member', scope: 'organization', workspaceId: null }),
    });
    expect(orgMember.body).toEqual({ status: 'ok' });
    // A credential sent to a probe is checked like anywhere else.
    expect((await api.http.get('/readyz', { key: 'slw_not-a-key' })).status).toBe(401);
  });
});
