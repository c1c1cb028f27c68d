import { randomBytes, randomInt } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from '@slipway/api/app';
import { createListener } from '../support/fixtures.js';
import { repohostFixture } from '../support/git-fixtures.js';
import {
  CONTENT_TYPES,
  HOSTILE_KEYS,
  HOSTILE_STRINGS,
  MALFORMED_JSON,
  Rng,
  describe as described,
  hostileValue,
  valueFor,
  type Known,
} from '../support/hostile-requests.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Fuzzing (issue 8 item 9): thousands of generated hostile requests across every route the app
 * declares (taken from the app itself, so a route added later is fuzzed without touching this
 * file), plus the mounted UIs. Real Postgres, Redis and git behind it. Asserts no response is a
 * 5xx, no body shows a stack trace, database or ORM text or a planted secret, no error body
 * lacks `detail`, nothing polluted Object.prototype, and the api is still ready afterwards.
 *
 * Seeded: the seed is printed, and SLIPWAY_FUZZ_SEED=<seed> generates the same requests again
 * (their interleaving on the server varies with concurrency; each failure names its request).
 * SLIPWAY_FUZZ_REQUESTS changes how many (default 6000).
 */

const SEED = Number(process.env.SLIPWAY_FUZZ_SEED ?? randomInt(2 ** 31));
const REQUESTS = Number(process.env.SLIPWAY_FUZZ_REQUESTS ?? 6_000);
const CONCURRENCY = 8;
const PLANTED_SECRET = `fuzz-planted-${randomBytes(12).toString('hex')}`;
const PLANTED_CLIENT_SECRET = `fuzz-client-${randomBytes(12).toString('hex')}`;

const STACK_TRACE = /\bat (?:async )?[\w$.<>[\] ]*\(?(?:file:\/\/|\/|node:)[^)\s]*:\d+:\d+|node_modules/;
const DATABASE_TEXT = new RegExp(
  [
    'QueryFailedError',
    'TypeORM',
    'EntityMetadata',
    'invalid input syntax for',
    'violates (?:unique|foreign key|not-null|check) constraint',
    'duplicate key value',
    'syntax error at or near',
    'relation "[^"]*" does not exist',
    'column "[^"]*"',
    'SQLSTATE',
    'ECONNREFUSED',
    'pg-protocol',
    'unterminated quoted',
  ].join('|'),
  'i',
);
const MOUNTS = [
  '/docs/',
  '/docs/swagger-ui-init.js',
  '/metrics',
  '/admin/queues',
  '/admin/queues/api/queues',
  '/admin/queues/api/queues/builds/pause',
  '/admin/queues/api/redis/stats',
  '/console',
  '/console/',
  '/console/assets',
  '/',
  '/o/t/host/deployments/00000000-0000-4000-8000-000000000000',
  '/o/t/host/deployments',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND', 'TRACE'];
/** Mostly valid, with hostile text in free-text fields: gets past validation into the handlers. */
const NEAR_VALID = { breakRate: 0.01, taintRate: 0.4 };
/** Broken all over: wrong types, huge and deep values, hostile keys. */
const HOSTILE = { breakRate: 0.15, taintRate: 0.2 };
/** Header values Node's client will send at all (its own parser refuses control characters). */
const HEADER_SAFE = /^[\t\x20-\x7e\x80-\xff]*$/;

interface Credentials {
  name: string;
  headers: Record<string, string>;
}

interface FuzzRequest {
  n: number;
  route: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

interface FuzzResponse {
  status: number;
  contentType: string;
  text: string;
}

let api: TestApi;
let known: Known;
let credentials: Credentials[];
let agentCredentials: Credentials;
let secrets: string[];
let prototypeBefore: string[];

beforeAll(async () => {
  api = await startTestApi({
    // Budgets so high the limiter runs on every request but never refuses: fuzz the handlers.
    SLIPWAY_RATE_LIMIT_PER_KEY: '10000000',
    SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT: '10000000',
    SLIPWAY_RATE_LIMIT_PER_ADDRESS: '10000000',
    SLIPWAY_RATE_LIMIT_AUTH_FAILURES: '10000000',
    // Likewise quotas: generated creates keep reaching the handlers.
    SLIPWAY_QUOTA_DEPLOYMENTS: '10000000',
    SLIPWAY_QUOTA_UPLOADS_PER_DAY: '10000000',
    LOG_LEVEL: 'warn',
  });
  prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  // Real resources of every kind, so generated ids and bodies reach real rows.
  const listenerId = await createListener(api, 'fuzz-cluster', ['agents']);
  const { integrationId, repoUrl } = await repohostFixture(api);
  const image = await api.http.post('/v2/deployments', {
    name: 'fuzz-image',
    source: 'external_container',
    source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'agents' } },
    source_revision_config: { image_uri: 'registry.example/fuzz:1' },
    secrets: [{ name: 'PLANTED', value: PLANTED_SECRET }],
  });
  expect(image.status, image.text).toBe(201);
  const upload = await api.http.post('/v2/deployments', {
    name: 'fuzz-upload',
    source: 'internal_source',
    source_config: {},
    source_revision_config: {},
  });
  expect(upload.status, upload.text).toBe(201);
  const uploadUrl = await api.http.post(`/v2/deployments/${upload.body.id}/upload-url`);
  expect(uploadUrl.status, uploadUrl.text).toBe(200);
  const tagKey = await api.http.post('/v2/tags/keys', { key: 'fuzz' });
  const tagValue = await api.http.post(`/v2/tags/keys/${tagKey.body.id}/values`, { value: 'one' });
  const orgAdminKey = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });
  const provider = await api.http.post(
    '/v2/auth/providers',
    {
      provider_id: 'fuzz-idp',
      name: 'Fuzz',
      client_id: 'client',
      client_secret: PLANTED_CLIENT_SECRET,
      auth_url: 'https://idp.example.com/authorize',
      token_url: 'https://idp.example.com/token',
    },
    { key: orgAdminKey },
  );
  expect(provider.status, provider.text).toBe(201);
  const sacrificial = await api.http.post('/v2/api-keys', { description: 'revocable by the fuzzer', role: 'member' });
  const agentKey = await api.mintKey({ listenerId });

  known = {
    deployment_id: [image.body.id, upload.body.id],
    deployment_ids: [image.body.id, `${image.body.id},${upload.body.id}`],
    revision_id: [image.body.latest_revision_id],
    listener_id: [listenerId],
    integration_id: [integrationId],
    tag_key_id: [tagKey.body.id],
    tag_value_id: [tagValue.body.id],
    tag_value_ids: [tagValue.body.id],
    provider_id: ['fuzz-idp', provider.body.id],
    api_key_id: [sacrificial.body.id],
    token: [new URL(uploadUrl.body.upload_url).pathname.split('/').pop()!],
    repo_url: [repoUrl],
    source_tarball_path: [uploadUrl.body.object_path],
    image_uri: ['registry.example/fuzz:2'],
    k8s_namespace: ['agents'],
  };
  credentials = [
    { name: 'workspace admin', headers: { 'x-api-key': api.adminKey } },
    { name: 'workspace admin (bearer)', headers: { authorization: `Bearer ${api.adminKey}` } },
    { name: 'org admin + tenant', headers: { 'x-api-key': orgAdminKey, 'x-tenant-id': api.workspaceId } },
    { name: 'org admin', headers: { 'x-api-key': orgAdminKey } },
    { name: 'member', headers: { 'x-api-key': await api.mintKey({ role: 'member' }) } },
    { name: 'none', headers: {} },
    { name: 'garbage key', headers: { 'x-api-key': `slw_${randomBytes(8).toString('hex')}` } },
    { name: 'jwt-shaped', headers: { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' } },
  ];
  agentCredentials = { name: 'listener agent', headers: { 'x-api-key': agentKey } };
  secrets = [
    PLANTED_SECRET,
    PLANTED_CLIENT_SECRET,
    api.config.secretsKey.key.toString('base64'),
    api.adminKey,
    orgAdminKey,
    agentKey,
  ];
});

afterAll(async () => {
  await api?.close();
});

/** One generated request for `route`, or for a mounted UI when `route` is null. */
function generate(n: number, route: RouteSpec | null, rng: Rng): FuzzRequest {
  const headers: Record<string, string> = {};
  const creds = route?.auth === 'listener-agent' && rng.chance(0.7) ? agentCredentials : rng.pick(credentials);
  Object.assign(headers, creds.headers);
  if (rng.chance(0.05)) headers['x-tenant-id'] = headerSafe(rng);
  if (rng.chance(0.05)) headers['x-request-id'] = headerSafe(rng);
  if (rng.chance(0.05)) headers['idempotency-key'] = headerSafe(rng);
  if (rng.chance(0.03))
    headers['x-forwarded-for'] = rng.pick(['::1', '2001:db8::1', 'not-an-ip', '1.2.3.4, 5.6.7.8', '']);

  if (!route) {
    const path =
      rng.pick(MOUNTS) + (rng.chance(0.3) ? `/${percentEncode(rng.pick(HOSTILE_STRINGS).slice(0, 200))}` : '');
    const method = rng.chance(0.7) ? 'GET' : rng.pick(METHODS);
    return { n, route: 'mounts', method, path: (rng.chance(0.1) ? '/api-host' : '') + path, headers };
  }

  const method = rng.chance(0.88) ? route.method.toUpperCase() : rng.pick(METHODS);
  let path = route.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => pathSegment(name, rng));
  if (rng.chance(0.1)) path = `/api-host${path}`;
  if (rng.chance(0.04)) path += rng.pick(['/', '/..', '/%2e%2e/%2e%2e/etc/passwd', '//', '/x']);
  const query = queryString(route, rng);
  if (query) path += `?${query}`;

  const request: FuzzRequest = { n, route: `${route.method.toUpperCase()} ${route.path}`, method, path, headers };
  const roll = rng.next();
  let text: string | undefined;
  if (roll < 0.35) text = serialise(valueFor(described(route.request?.body), rng, known, NEAR_VALID));
  else if (roll < 0.55) text = serialise(valueFor(described(route.request?.body), rng, known, HOSTILE));
  else if (roll < 0.65) text = rng.pick(MALFORMED_JSON);
  else if (roll < 0.75) text = serialise(hostileValue(rng));
  else if (roll < 0.78) text = JSON.stringify({ big: 'A'.repeat(1_100_000) });
  if (text !== undefined || rng.chance(0.1)) {
    headers['content-type'] = rng.chance(0.75) ? 'application/json' : rng.pick(CONTENT_TYPES);
    if (rng.chance(0.03)) headers['content-encoding'] = rng.pick(['gzip', 'deflate', 'br', 'identity', 'x-nope']);
    request.body = Buffer.from(text ?? '', rng.chance(0.03) ? 'utf16le' : 'utf8');
    // Node's client frames a GET/DELETE body only when told its length.
    headers['content-length'] = String(request.body.length);
  }
  return request;
}

/** Like encodeURIComponent, but total: a lone surrogate goes out as the bytes UTF-8 gives it. */
function percentEncode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.!~*'()]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function headerSafe(rng: Rng): string {
  const value = rng.pick(HOSTILE_STRINGS.filter((s) => HEADER_SAFE.test(s)));
  return value.slice(0, 8_000);
}

/** A path parameter: a real id of that name, a random UUID, or something hostile (escaped or raw). */
function pathSegment(name: string, rng: Rng): string {
  const roll = rng.next();
  if (roll < 0.55 && known[name]?.length) return percentEncode(rng.pick(known[name]!));
  if (roll < 0.7) return rng.uuid();
  if (roll < 0.8)
    return rng.pick([
      '%00',
      '%ED%A0%80',
      '%',
      '%G0',
      '%C0%AE%C0%AE',
      '..%2f..%2f',
      '%252e',
      '%E2%80%AE',
      '%F0%9F%98%80',
    ]);
  const value = rng.pick(HOSTILE_STRINGS).slice(0, 2_000);
  return value === '' ? 'x' : percentEncode(value);
}

function queryString(route: RouteSpec, rng: Rng): string {
  const pairs: Array<[string, string]> = [];
  const query = described(route.request?.query);
  if (query && rng.chance(0.8)) {
    const values = valueFor(query, rng, known, rng.chance(0.5) ? NEAR_VALID : HOSTILE) as
      | Record<string, unknown>
      | unknown;
    if (values && typeof values === 'object' && !Array.isArray(values)) {
      for (const [key, value] of Object.entries(values)) {
        for (const item of Array.isArray(value) ? value.slice(0, 5) : [value])
          pairs.push([key, typeof item === 'string' ? item : (JSON.stringify(item) ?? '')]);
      }
    }
  }
  if (rng.chance(0.15)) pairs.push([rng.pick(HOSTILE_KEYS), String(rng.pick(HOSTILE_STRINGS))]);
  if (rng.chance(0.05)) pairs.push(['__proto__[polluted]', '1'], ['constructor[prototype][polluted]', '1']);
  const encoded = pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v.slice(0, 5_000))}`);
  if (rng.chance(0.05)) encoded.push(rng.pick(['a=%ED%A0%80', 'b=%', 'c=%00', '%=1', 'd[]=1&d[]=2', '&&&', '=']));
  return encoded.join('&');
}

/** JSON text; `__proto__` keys survive (the generator defines them as own properties). */
function serialise(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

function send(request: FuzzRequest): Promise<FuzzResponse> {
  const url = new URL(api.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      // A connection each: a kept-alive socket the server has just closed (after refusing a body)
      // would fail the next request on the client side, which says nothing about the server.
      {
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        headers: request.headers,
        agent: false,
        timeout: 30_000,
      },
      (res) => {
        // A stream (events, followed logs) that the server accepted stays open: its status and
        // headers are the answer; the stream itself is the SSE tests' business.
        if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream') && (res.statusCode ?? 0) < 400) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), text: '' });
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= 4_000_000) chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', cut);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    // A server that refuses a body early (413), or answers a GET without reading its body, may
    // close the connection while the client still writes: the kernel then resets it, cutting the
    // request or the answer short (Node has no lingering close). HTTP's business, not a fault.
    const size = request.body?.length ?? 0;
    const unread = size > 1_000_000 || (size > 0 && (request.method === 'GET' || request.method === 'HEAD'));
    function cut(err: NodeJS.ErrnoException): void {
      if (unread && (err.code === 'EPIPE' || err.code === 'ECONNRESET' || err.message === 'aborted'))
        resolve({ status: 0, contentType: '', text: '' });
      else reject(err);
    }
    req.on('error', cut);
    req.end(request.body);
  });
}

/** Everything wrong with one exchange (empty when it is fine). */
function problemsOf(request: FuzzRequest, response: FuzzResponse): string[] {
  const problems: string[] = [];
  if (response.status >= 500) problems.push(`status ${response.status}`);
  if (STACK_TRACE.test(response.text)) problems.push('stack trace in body');
  if (DATABASE_TEXT.test(response.text))
    problems.push(`database/ORM text in body: ${DATABASE_TEXT.exec(response.text)![0]}`);
  for (const secret of secrets) if (response.text.includes(secret)) problems.push('a planted secret in body');
  const isApiRoute = request.route !== 'mounts';
  if (isApiRoute && response.status >= 400 && request.method !== 'HEAD' && response.status !== 0) {
    let detail: unknown;
    try {
      detail = (JSON.parse(response.text) as { detail?: unknown }).detail;
    } catch {
      detail = undefined;
    }
    if (detail === undefined) problems.push('error body without `detail`');
  }
  return problems;
}

describe(`fuzzing every route (seed ${SEED})`, () => {
  it(`answers ${REQUESTS} hostile requests without a 5xx, a leak or a crash`, { timeout: 180_000 }, async () => {
    console.log(
      `fuzz seed: ${SEED} (reproduce: SLIPWAY_FUZZ_SEED=${SEED} pnpm exec vitest run test/integration/fuzz.test.ts)`,
    );
    const rng = new Rng(SEED);
    const routes = [...api.routes];
    expect(routes.length).toBeGreaterThan(40);
    const requests: FuzzRequest[] = [];
    let k = 0;
    for (let n = 0; n < REQUESTS; n += 1)
      requests.push(generate(n, n % 40 === 39 ? null : routes[k++ % routes.length]!, rng));

    const failures: string[] = [];
    const byStatus = new Map<number, number>();
    const byRoute = new Map<string, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const request = requests[next++]!;
          const response = await send(request).catch((err: Error) => ({
            status: -1,
            contentType: '',
            text: `client error: ${err.message}`,
          }));
          byStatus.set(response.status, (byStatus.get(response.status) ?? 0) + 1);
          byRoute.set(request.route, (byRoute.get(request.route) ?? 0) + 1);
          const problems = response.status === -1 ? [response.text] : problemsOf(request, response);
          if (problems.length) {
            failures.push(
              `#${request.n} ${request.method} ${request.path.slice(0, 300)} [${request.headers['content-type'] ?? '-'}] ` +
                `body=${request.body?.toString('utf8').slice(0, 200) ?? '-'} ` +
                `→ ${response.status} ${response.text.slice(0, 300)}: ${problems.join('; ')}`,
            );
          }
        }
      }),
    );
    console.log(
      `fuzz: ${requests.length} requests, statuses ${JSON.stringify(Object.fromEntries([...byStatus].sort()))}`,
    );

    // Every declared route got its share (the mounted UIs too).
    const share = Math.floor(k / routes.length);
    for (const route of routes)
      expect(byRoute.get(`${route.method.toUpperCase()} ${route.path}`), route.path).toBeGreaterThanOrEqual(share);
    expect(byRoute.get('mounts')).toBe(REQUESTS - k);
    expect(
      failures,
      `seed ${SEED}: ${failures.length} bad answers, first ones:\n${failures.slice(0, 15).join('\n')}`,
    ).toEqual([]);

    // Nothing crashed or hid a bug behind a 4xx, nothing polluted the process, and it still serves.
    const unhandled = api.logs
      .lines()
      .filter((l: any) => l.msg === 'unhandled error' || l.msg === 'error after response started');
    expect(
      unhandled.map((l: any) => l.err?.message),
      `seed ${SEED}`,
    ).toEqual([]);
    // The 422 safety net behind validation never had to act: validation caught everything first.
    const refused = api.logs
      .lines()
      .filter((l: any) => l.msg === 'the database refused a value that passed validation');
    expect(
      refused.map((l: any) => `${l.req?.method ?? ''} ${l.req?.url ?? ''}: ${l.err?.message}`),
      `seed ${SEED}`,
    ).toEqual([]);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const ready = await api.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
    expect((await api.http.get(`/v2/deployments/${known.deployment_id![0]}`)).status).toBe(200);
  });
});
