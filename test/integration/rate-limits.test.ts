import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LOCKOUT_RECHECK_MS } from '@slipway/access';
import { hashApiKey } from '@slipway/crypto';
import { TcpProxy } from '../support/tcp-proxy.js';
import type { HttpClient, HttpResponse } from '../support/http.js';
import { startReplica, startTestApi, type Replica, type TestApi } from '../support/test-api.js';

/**
 * Request budgets (issue 8 item 2, docs/api.md, Errors: 429 with `Retry-After`). Small budgets set
 * through config, two api apps sharing one Redis (as two api replicas do), real Redis taken
 * away through a TCP proxy. Each budget has its own test api, so no test spends another's.
 * Different client addresses are X-Forwarded-For from loopback, which the default
 * SLIPWAY_TRUST_PROXY (`loopback`) believes, as it would from a local reverse proxy.
 */

const WINDOW = '60';
const from = (address: string) => ({ 'X-Forwarded-For': address });

function expectRateLimited(
  res: HttpResponse,
  detail: RegExp = /^Too many requests\. Retry in \d+ seconds?\.$/,
  windowSeconds = Number(WINDOW),
): void {
  expect(res.status, res.text).toBe(429);
  expect(res.body).toEqual({ detail: expect.stringMatching(detail) });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  expect(res.body.detail).toContain(`Retry in ${retryAfter} second`);
}

async function metric(http: HttpClient, name: string, headers: Record<string, string>): Promise<number> {
  const text = (await http.get('/metrics', { key: null, headers })).text;
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('per API key, shared by every api replica', () => {
  const BUDGET = 6;
  let api: TestApi;
  let replica: Replica;

  beforeAll(async () => {
    api = await startTestApi({ SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: WINDOW, SLIPWAY_RATE_LIMIT_PER_KEY: String(BUDGET) });
    replica = await startReplica(api);
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  it('answers 429 with Retry-After once the key has spent its budget across both replicas', async () => {
    const key = await api.mintKey({ role: 'member' });
    const clients = [api.http.as(key), replica.http.as(key)];
    for (let i = 0; i < BUDGET; i += 1) {
      const res = await clients[i % 2]!.get('/v2/listeners');
      expect(res.status, `request ${i + 1}`).toBe(200);
    }
    // Each replica has served only half the budget: only a shared count refuses now.
    for (const client of clients) expectRateLimited(await client.get('/v2/listeners'));
    // Refused writes write nothing.
    const create = await clients[0]!.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'limited',
      compute_config: { k8s_namespaces: null },
    });
    expectRateLimited(create);
    expect(await api.dataSource.query(`SELECT 1 FROM listeners WHERE compute_id = 'limited'`)).toEqual([]);
  });

  it('keeps budgets per key: another key, and the probes, still answer', async () => {
    const spent = await api.mintKey({ role: 'member' });
    for (let i = 0; i < BUDGET; i += 1) await api.http.get('/v2/listeners', { key: spent });
    expectRateLimited(await api.http.get('/v2/listeners', { key: spent }));
    const other = await api.mintKey({ role: 'member' });
    expect((await replica.http.get('/v2/listeners', { key: other })).status).toBe(200);
    expect((await api.http.get('/readyz', { key: null })).status).toBe(200);
  });

  it('charges refused requests too: a 403 or 404 costs the caller like a 200', async () => {
    const member = await api.mintKey({ role: 'member' });
    for (let i = 0; i < BUDGET; i += 1) {
      const res = await api.http.get('/v2/api-keys', { key: member });
      expect(res.status).toBe(403);
    }
    expectRateLimited(await api.http.get('/v2/listeners', { key: member }));
  });

  it('covers Bull Board: an organization admin key has the same budget there', async () => {
    const admin = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });
    for (let i = 0; i < BUDGET; i += 1) {
      expect((await api.http.get('/admin/queues/api/queues', { key: admin })).status).toBe(200);
    }
    expectRateLimited(await replica.http.get('/admin/queues/api/queues', { key: admin }));
    expectRateLimited(await api.http.get('/v2/api-keys', { key: admin }));
  });

  it('counts what it refused in /metrics', async () => {
    expect(await metric(api.http, 'slipway_rate_limited_total{budget="key"}', from('10.9.9.9'))).toBeGreaterThanOrEqual(
      3,
    );
  });
});

describe("a busy key's budget, charged in grants", () => {
  const BUDGET = 400; // grants of up to 8 points (1/50 of the budget)
  let api: TestApi;
  let replica: Replica;
  let monitor: Redis;
  const calls: string[] = [];

  beforeAll(async () => {
    api = await startTestApi({ SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: WINDOW, SLIPWAY_RATE_LIMIT_PER_KEY: String(BUDGET) });
    replica = await startReplica(api);
    // Every call the api processes make on this file's key budgets (its prefix is this api's
    // own): one script each, whose inner commands MONITOR also shows.
    monitor = await new Redis(api.config.redisUrl).monitor();
    const budgets = `${api.config.queuePrefix}:ratelimit:key:`;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval(sha)?$/i.test(args[0] ?? '') && args.some((a) => String(a).startsWith(budgets)))
        calls.push(args.join(' '));
    });
  });
  afterAll(async () => {
    monitor?.disconnect();
    await replica?.close();
    await api?.close();
  });

  it('serves a busy key with a Redis call per grant, not per request, and never more than the budget across both replicas', async () => {
    const key = await api.mintKey({ role: 'member' });
    const clients = [api.http.as(key), replica.http.as(key)];
    calls.length = 0;
    const statuses: number[] = [];
    // 500 requests, 10 at a time on each replica, both replicas drawing on the one budget.
    for (let round = 0; round < 25; round += 1) {
      const batch = await Promise.all(clients.flatMap((c) => Array.from({ length: 10 }, () => c.get('/v2/listeners'))));
      statuses.push(...batch.map((r) => r.status));
    }
    const served = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(served).toBeLessThanOrEqual(BUDGET);
    // What the other replica held unused when a grant found the budget spent: under a grant each.
    expect(served).toBeGreaterThanOrEqual(BUDGET - 2 * 7);
    expect(statuses.slice(-20).every((s) => s === 429)).toBe(true);
    // A call per request would be 500; a spent budget is refused without asking again.
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.length).toBeLessThan(100);
    expectRateLimited(await clients[0]!.get('/v2/listeners'));
  });
});

describe('listener agents poll on a larger budget', () => {
  let api: TestApi;
  let agentKey: string;
  let listenerId: string;

  beforeAll(async () => {
    api = await startTestApi({
      SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: WINDOW,
      SLIPWAY_RATE_LIMIT_PER_KEY: '4',
      SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT: '12',
    });
    const res = await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'agent-budget',
      compute_config: { k8s_namespaces: null },
    });
    listenerId = res.body.id;
    agentKey = await api.mintKey({ listenerId });
  });
  afterAll(async () => {
    await api?.close();
  });

  it("serves an agent's desired-state polls past the ordinary key budget, up to its own", async () => {
    for (let i = 0; i < 12; i += 1) {
      const res = await api.http.get(`/v2/listeners/${listenerId}/desired-state`, { key: agentKey });
      expect(res.status, `poll ${i + 1}`).toBe(200);
      expect(res.body.listener_id).toBe(listenerId);
    }
    expectRateLimited(await api.http.get(`/v2/listeners/${listenerId}/desired-state`, { key: agentKey }));
    const reports = await api.http.post(`/v2/listeners/${listenerId}/reports`, { revisions: [] }, { key: agentKey });
    expectRateLimited(reports);
  });
});

describe('per client address without credentials, and failed authentications', () => {
  const PER_ADDRESS = 5;
  const FAILURES = 3;
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi({
      SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: WINDOW,
      SLIPWAY_RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS),
      SLIPWAY_RATE_LIMIT_AUTH_FAILURES: String(FAILURES),
      SLIPWAY_RATE_LIMIT_AUTH_FAILURE_WINDOW_SECONDS: '300',
    });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('limits /metrics, /docs, /openapi.json and requests without a key together, per address; never the probes', async () => {
    const me = from('203.0.113.7');
    const paths = ['/metrics', '/docs/', '/openapi.json', '/v2/listeners', '/metrics'];
    const statuses = [];
    for (const path of paths) statuses.push((await api.http.get(path, { key: null, headers: me })).status);
    expect(statuses).toEqual([200, 200, 200, 401, 200]);
    for (const path of ['/metrics', '/docs/', '/openapi.json', '/v2/listeners', '/admin/queues']) {
      expectRateLimited(await api.http.get(path, { key: null, headers: me }));
    }
    // The probes are never charged: an orchestrator behind the spent address still sees the api ready.
    for (const path of ['/readyz', '/healthz', '/api-host/readyz', '/api-host/healthz']) {
      const res = await api.http.get(path, { key: null, headers: me });
      expect(res.status, path).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    }
    // Another address has its own budget, and keyed callers are not charged to the address.
    expect((await api.http.get('/metrics', { key: null, headers: from('203.0.113.8') })).status).toBe(200);
    expect((await api.http.get('/v2/listeners', { headers: me })).status).toBe(200);
  });

  it('counts an IPv6 client by its /64', async () => {
    for (let i = 0; i < PER_ADDRESS; i += 1) {
      expect((await api.http.get('/openapi.json', { key: null, headers: from(`2001:db8:1:2::${i + 1}`) })).status).toBe(
        200,
      );
    }
    expectRateLimited(await api.http.get('/openapi.json', { key: null, headers: from('2001:db8:1:2:ffff::9') }));
    expect((await api.http.get('/openapi.json', { key: null, headers: from('2001:db8:1:3::1') })).status).toBe(200);
  });

  it('answers 429 to an address past its failed authentications, but still serves a valid key from it', async () => {
    const attacker = from('198.51.100.20');
    const wrong: Array<Record<string, string>> = [
      { 'x-api-key': `slw_${randomUUID()}` },
      { authorization: `Bearer slw_${randomUUID()}` },
      { authorization: `Basic ${Buffer.from(`admin:slw_${randomUUID()}`).toString('base64')}` },
    ];
    for (const [i, headers] of wrong.entries()) {
      const path = i === 2 ? '/admin/queues' : '/v2/listeners';
      const res = await api.http.get(path, { key: null, headers: { ...attacker, ...headers } });
      expect(res.status, path).toBe(401);
    }
    const lockedOut = /^Too many failed authentications from this address\. Retry in \d+ seconds?\.$/;
    const locked = await api.http.get('/v2/listeners', {
      key: null,
      headers: { ...attacker, 'x-api-key': `slw_${randomUUID()}` },
    });
    expectRateLimited(locked, lockedOut, 300);
    // The failure window's, not the request window's.
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(60);
    // A colleague behind the same address, with a valid key, is not refused.
    expect((await api.http.get('/v2/listeners', { headers: attacker })).status).toBe(200);
    const orgAdmin = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });
    expect((await api.http.get('/admin/queues/api/queues', { key: orgAdmin, headers: attacker })).status).toBe(200);
  });

  it('locks a credential that keeps failing, wherever it comes from; other keys from its address still work', async () => {
    const revoked = await api.mintKey({ role: 'member' });
    const [{ id }] = await api.dataSource.query(`SELECT id FROM api_keys WHERE key_hash = $1`, [hashApiKey(revoked)]);
    expect((await api.http.delete(`/v2/api-keys/${id}`)).status).toBe(204);
    for (let i = 0; i < FAILURES; i += 1) {
      expect(
        (await api.http.get('/v2/listeners', { key: revoked, headers: from(`198.51.100.${40 + i}`) })).status,
      ).toBe(401);
    }
    const lockedOut = /^Too many failed authentications with this credential\. Retry in \d+ seconds?\.$/;
    // Counted per credential: a new address does not start it afresh.
    expectRateLimited(
      await api.http.get('/v2/listeners', { key: revoked, headers: from('198.51.100.49') }),
      lockedOut,
      300,
    );
    // Only that credential: the addresses it failed from, each under its own budget, still serve other keys.
    expect((await api.http.get('/v2/listeners', { headers: from('198.51.100.40') })).status).toBe(200);
  });

  it('a credential lockout counted on another replica takes effect here within a second', async () => {
    const replica = await startReplica(api);
    try {
      const wrong = `slw_${randomUUID()}`;
      // One failure here, the rest there: the count is shared.
      expect((await api.http.get('/v2/listeners', { key: wrong, headers: from('198.51.100.30') })).status).toBe(401);
      for (let i = 1; i < FAILURES; i += 1) {
        const res = await replica.http.get('/v2/listeners', { key: wrong, headers: from(`198.51.100.${30 + i}`) });
        expect(res.status).toBe(401);
      }
      expectRateLimited(
        await replica.http.get('/v2/listeners', { key: wrong }),
        /^Too many failed authentications with this credential/,
        300,
      );
      await vi.waitFor(
        async () =>
          expectRateLimited(
            await api.http.get('/v2/listeners', { key: wrong }),
            /^Too many failed authentications with this credential/,
            300,
          ),
        {
          timeout: LOCKOUT_RECHECK_MS + 1_000,
          interval: 100,
        },
      );
    } finally {
      await replica.close();
    }
  });
});

describe('with Redis away', () => {
  const BUDGET = 4;
  let api: TestApi;
  let proxy: TcpProxy;
  let replica: Replica;

  beforeAll(async () => {
    api = await startTestApi({ SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: WINDOW, SLIPWAY_RATE_LIMIT_PER_KEY: String(BUDGET) });
    proxy = await TcpProxy.start(api.config.redisUrl, 6379);
    replica = await startReplica(api, { redisUrl: proxy.urlFor(api.config.redisUrl) });
    // Up through the proxy first, so the outage is one that happens to a running api.
    await vi.waitFor(async () => expect((await replica.http.get('/readyz', { key: null })).status).toBe(200), {
      timeout: 10_000,
      interval: 100,
    });
  });
  afterAll(async () => {
    await replica?.close();
    await proxy?.refuse();
    await api?.close();
  });

  async function spendLocally(client: HttpClient, key: string): Promise<void> {
    for (let i = 0; i < BUDGET; i += 1) {
      const res = await client.get('/v2/listeners', { key });
      expect(res.status, `request ${i + 1}: ${res.text}`).toBe(200);
    }
    // Still bounded: this process counts on its own.
    expectRateLimited(await client.get('/v2/listeners', { key }));
  }

  it('keeps serving when Redis refuses connections, counting budgets per process, and says so', async () => {
    await proxy.refuse();
    await spendLocally(replica.http, await api.mintKey({ role: 'member' }));
    // An admin's credential sees why.
    const ready = await replica.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('degraded');
    expect(await metric(replica.http, 'slipway_rate_limit_store_errors_total', {})).toBeGreaterThanOrEqual(BUDGET);
    const warnings = replica.logs.lines().filter((l: any) => /rate limits: Redis does not answer/.test(String(l.msg)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.level).toBe('warn');
  });

  it('keeps serving when Redis hangs without answering', async () => {
    await proxy.restore();
    proxy.stall();
    await spendLocally(replica.http, await api.mintKey({ role: 'member' }));
  });
});
