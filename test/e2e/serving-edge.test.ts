import { randomUUID } from 'node:crypto';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '@slipway/crypto';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { deployBuiltApp } from '../support/built-revision.js';
import { HttpClient } from '../support/http.js';
import { freePort } from '../support/ports.js';
import { sendRaw } from '../support/raw-http.js';
import { serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The serving edge and the api's auth edge end to end (issue 24): a real deployer process serves
 * an agent-server revision (its manifest says so, so the serving URL wants a workspace key)
 * whose app echoes what it receives and keeps a list of every request that reached it; a real
 * api process answers the probe and lockout cases. Revocations go through the test's in-process
 * api over the same database, as another api replica's would.
 */
const PORT_MIN = 38_000 + Math.floor(Math.random() * 900);
const FAILURES = 3;
const PER_ADDRESS = 5;
const RUNTIME_ENV = { SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN), SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99) };
const LIMITS_ENV = {
  SLIPWAY_RATE_LIMIT_AUTH_FAILURES: String(FAILURES),
  SLIPWAY_RATE_LIMIT_AUTH_FAILURE_WINDOW_SECONDS: '300',
  SLIPWAY_RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS),
};
/** What the issue allows a revoke to take on the serving path, and a margin for the poll itself. */
const REVOKED_WITHIN_MS = 1_000;
const POLL_MARGIN_MS = 250;

/** Echoes each request's headers; `/seen` lists every request that reached it; Upgrades switch to an echo protocol. */
const ECHO_APP = `import http from 'node:http';
const seen = [];
const server = http.createServer((req, res) => {
  seen.push({ method: req.method, url: req.url, headers: req.headers });
  if (req.url === '/ok') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  const body = req.url === '/seen' ? JSON.stringify(seen) : JSON.stringify({ url: req.url, headers: req.headers });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
});
server.on('upgrade', (req, socket) => {
  seen.push({ method: req.method, url: req.url, headers: req.headers, upgrade: true });
  if (req.url.startsWith('/no-switch')) {
    socket.end('HTTP/1.1 400 Bad Request\\r\\ncontent-length: 9\\r\\nconnection: keep-alive\\r\\n\\r\\nno switch');
    return;
  }
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nupgrade: echo\\r\\nconnection: Upgrade\\r\\n\\r\\n');
  socket.write(JSON.stringify({ headers: req.headers }) + '\\n');
  socket.pipe(socket);
});
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

let api: TestApi;
let deployer: ServiceProcess;
let deployerHealth: string;
let apiProcess: ServiceProcess;
let apiUrl: string;
let serving: string;
let servingPort: number;
let key: string;

beforeAll(async () => {
  api = await startTestApi(RUNTIME_ENV);
  api.relay.start();
  const healthPort = await freePort();
  deployerHealth = `http://127.0.0.1:${healthPort}`;
  deployer = await startService(
    'deployer',
    serviceEnv(api, { ...RUNTIME_ENV, ...LIMITS_ENV, SLIPWAY_WORKER_HEALTH_PORT: String(healthPort) }),
  );
  const port = await freePort();
  apiProcess = await startService('api', serviceEnv(api, { PORT: String(port), HOST: '127.0.0.1', ...LIMITS_ENV }));
  apiUrl = `http://127.0.0.1:${port}`;

  ({ servingPort } = await deployBuiltApp(api, 'echo-agent', ECHO_APP, { agent_server: { auth_path: null } }));
  serving = `http://127.0.0.1:${servingPort}`;
  key = await api.mintKey({ role: 'member' });
}, 120_000);

afterAll(async () => {
  await apiProcess?.stop();
  await deployer?.stop('SIGKILL');
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
}, 60_000);

// ------------------------------------------------------------------ helpers

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Whether the request went out on a connection an earlier request had used. */
  reused: boolean;
}

/** One request through `agent` (keep-alive, one socket: later requests reuse the connection). */
function send(agent: Agent, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: servingPort, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
          reused: req.reusedSocket,
        }),
      );
    });
    req.once('error', reject);
    req.end();
  });
}

/** Writes raw bytes on a new connection and collects everything the proxy sends until it closes (or `waitMs` passes). */
const raw = (bytes: string[], waitMs = 3_000) => sendRaw(servingPort, bytes, { waitMs });

/** Every request the app has received (asked with a valid key, so this is its true list). */
async function seenByApp(): Promise<Array<{ url: string; headers: IncomingHttpHeaders; upgrade?: boolean }>> {
  const res = await fetch(`${serving}/seen`, { headers: { 'x-api-key': key } });
  expect(res.status).toBe(200);
  return (await res.json()) as Array<{ url: string; headers: IncomingHttpHeaders; upgrade?: boolean }>;
}

const statusLines = (data: string) => data.match(/^HTTP\/1\.1 \d{3}/gm) ?? [];

// ------------------------------------------------------------------ serving edge

describe('the serving edge', () => {
  it('serves a plain GET /ok without a key, and refuses anything else without one', async () => {
    expect((await fetch(`${serving}/ok`)).status).toBe(200);
    const refused = await fetch(`${serving}/echo`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('ApiKey header="X-Api-Key"');
    expect((await fetch(`${serving}/ok`, { method: 'POST', body: 'x' })).status).toBe(401);
  });

  it(
    'refuses an Upgrade to /ok without a key before the app sees it, and closes the connection: ' +
      'a second request on it never arrives',
    async () => {
      const marker = randomUUID();
      const { data, closedByServer } = await raw([
        `GET /ok?upgrade=${marker} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ` +
          `websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
        `GET /after-upgrade-${marker} HTTP/1.1\r\nHost: x\r\n\r\n`,
      ]);
      expect(statusLines(data)).toEqual(['HTTP/1.1 401']);
      expect(closedByServer).toBe(true);
      expect((await seenByApp()).filter((r) => r.url.includes(marker))).toEqual([]);
    },
  );

  it("never relays a connection the app did not switch: a refused Upgrade's next request is not forwarded unchecked", async () => {
    const marker = randomUUID();
    const { data, closedByServer } = await raw([
      `GET /no-switch-${marker} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
      `GET /smuggled-${marker} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ]);
    expect(statusLines(data)).toEqual(['HTTP/1.1 400']);
    expect(closedByServer).toBe(true);
    const seen = (await seenByApp()).filter((r) => r.url.includes(marker));
    expect(seen.map((r) => r.url)).toEqual([`/no-switch-${marker}`]);
    expect(seen[0]!.headers['x-api-key']).toBeUndefined();
  });

  it("keeps the caller's key from the app: plain requests, a keep-alive sequence, and an Upgrade", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const viaHeader = await send(agent, '/echo?n=1', { 'x-api-key': key, authorization: 'Bearer app-own-token' });
      expect(viaHeader.status).toBe(200);
      const first = JSON.parse(viaHeader.body).headers;
      expect(first['x-api-key']).toBeUndefined();
      // The app's own Authorization is its business: only one that carried the key is removed.
      expect(first.authorization).toBe('Bearer app-own-token');

      const viaBearer = await send(agent, '/echo?n=2', { authorization: `Bearer ${key}` });
      expect(viaBearer.status).toBe(200);
      expect(viaBearer.reused).toBe(true);
      expect(JSON.parse(viaBearer.body).headers.authorization).toBeUndefined();

      const both = await send(agent, '/echo?n=3', { 'x-api-key': key, authorization: `Bearer ${key}` });
      expect(both.reused).toBe(true);
      expect(JSON.stringify(JSON.parse(both.body).headers)).not.toContain(key);
    } finally {
      agent.destroy();
    }

    const { data } = await raw(
      [
        `GET /socket HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nAuthorization: Bearer ${key}\r\nConnection: ` +
          `Upgrade\r\nUpgrade: echo\r\n\r\n`,
        'ping-after-switch',
      ],
      1_500,
    );
    expect(statusLines(data)).toEqual(['HTTP/1.1 101']);
    expect(data).toContain('"headers"');
    expect(data).not.toContain(key);
    // The switched connection is the app's own protocol: its echo comes back.
    expect(data).toContain('ping-after-switch');
  });

  it('checks every request of a keep-alive connection: a second request without a key, or with a revoked one, is refused', async () => {
    const revoked = await api.mintKey({ role: 'member' });
    const marker = randomUUID();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await send(agent, `/echo?first=${marker}`, { 'x-api-key': key })).status).toBe(200);
      const keyless = await send(agent, `/echo?keyless=${marker}`);
      expect(keyless.reused).toBe(true);
      expect(keyless.status).toBe(401);

      expect((await send(agent, `/echo?warm=${marker}`, { 'x-api-key': revoked })).status).toBe(200);
      const [{ id }] = await api.dataSource.query(`SELECT id FROM api_keys WHERE key_hash = $1`, [hashApiKey(revoked)]);
      expect((await api.http.delete(`/v2/api-keys/${id}`)).status).toBe(204);
      await new Promise((r) => setTimeout(r, REVOKED_WITHIN_MS + POLL_MARGIN_MS));
      const afterRevoke = await send(agent, `/echo?revoked=${marker}`, { 'x-api-key': revoked });
      expect(afterRevoke.reused).toBe(true);
      expect(afterRevoke.status).toBe(401);
    } finally {
      agent.destroy();
    }
    const urls = (await seenByApp()).map((r) => r.url).filter((u) => u.includes(marker));
    expect(urls).toEqual([`/echo?first=${marker}`, `/echo?warm=${marker}`]);
  });

  it('refuses a revoked key on the serving path within a second of the revoke', async () => {
    const doomed = await api.mintKey({ role: 'member' });
    // Served (and so cached by the deployer) first.
    expect((await fetch(`${serving}/echo`, { headers: { 'x-api-key': doomed } })).status).toBe(200);
    const [{ id }] = await api.dataSource.query(`SELECT id FROM api_keys WHERE key_hash = $1`, [hashApiKey(doomed)]);
    expect((await api.http.delete(`/v2/api-keys/${id}`)).status).toBe(204);
    const deadline = Date.now() + REVOKED_WITHIN_MS + POLL_MARGIN_MS;
    let refusedAt: number | null = null;
    while (refusedAt === null && Date.now() < deadline + 2_000) {
      const startedAt = Date.now();
      const res = await fetch(`${serving}/echo`, { headers: { 'x-api-key': doomed } });
      // 429 once the revoked key has failed often enough: refused all the same.
      if (res.status === 401 || res.status === 429) refusedAt = startedAt;
      else expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(refusedAt).not.toBeNull();
    expect(refusedAt!).toBeLessThanOrEqual(deadline);
    // Once refused, it stays refused.
    for (let i = 0; i < 3; i++)
      expect([401, 429]).toContain((await fetch(`${serving}/echo`, { headers: { 'x-api-key': doomed } })).status);
  });

  it('locks a key that keeps failing on the serving path, while a valid key from the same address still gets in', async () => {
    const wrong = `slw_${randomUUID()}`;
    // 401, or 429 once this address (loopback, shared by every case here) has failed often enough.
    for (let i = 0; i < FAILURES; i++)
      expect([401, 429]).toContain((await fetch(`${serving}/echo`, { headers: { 'x-api-key': wrong } })).status);
    const locked = await fetch(`${serving}/echo`, { headers: { 'x-api-key': wrong } });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await locked.json()) as { detail: string }).detail).toMatch(
      /^Too many failed authentications with this credential/,
    );
    expect((await fetch(`${serving}/echo`, { headers: { 'x-api-key': key } })).status).toBe(200);
  });
});

// ------------------------------------------------------------------ api edge

describe('the api edge (a real api process)', () => {
  const from = (address: string) => ({ 'X-Forwarded-For': address });

  it('lets a member set serving_auth "api_key" but not "none" (403); an admin may', async () => {
    const member = new HttpClient(apiUrl, await api.mintKey({ role: 'member' }));
    const admin = new HttpClient(apiUrl, api.adminKey);
    const body = (name: string, servingAuth: string) => ({
      name,
      source: 'upload',
      source_config: { serving_auth: servingAuth },
      source_revision_config: {},
    });

    const refused = await member.post('/v2/deployments', body(`open-${randomUUID().slice(0, 8)}`, 'none'));
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.detail).toMatch(/admin/);
    const mine = await member.post('/v2/deployments', body(`keyed-${randomUUID().slice(0, 8)}`, 'api_key'));
    expect(mine.status, mine.text).toBe(201);
    expect(
      (await member.patch(`/v2/deployments/${mine.body.id}`, { source_config: { serving_auth: 'none' } })).status,
    ).toBe(403);
    expect(
      (await member.post(`/v2/deployments/${mine.body.id}/revisions`, { source_config: { serving_auth: 'none' } }))
        .status,
    ).toBe(403);
    expect((await member.get(`/v2/deployments/${mine.body.id}`)).body.source_config.serving_auth).toBe('api_key');

    const opened = await admin.patch(`/v2/deployments/${mine.body.id}`, { source_config: { serving_auth: 'none' } });
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.source_config.serving_auth).toBe('none');
    const adminCreated = await admin.post('/v2/deployments', body(`open-${randomUUID().slice(0, 8)}`, 'none'));
    expect(adminCreated.status, adminCreated.text).toBe(201);
  });

  it('answers /readyz 200 after the address spent its budget, with no details for an anonymous caller', async () => {
    const http = new HttpClient(apiUrl, null);
    const me = from('203.0.113.70');
    for (let i = 0; i < PER_ADDRESS; i++) expect((await http.get('/openapi.json', { headers: me })).status).toBe(200);
    expect((await http.get('/openapi.json', { headers: me })).status).toBe(429);
    for (const path of ['/readyz', '/healthz', '/readyz']) {
      const res = await http.get(path, { headers: me });
      expect(res.status, path).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    }
  });

  it("never rate limits a worker's health port, and it answers only ok", async () => {
    for (let i = 0; i < 3 * PER_ADDRESS; i++) {
      for (const path of ['/healthz', '/readyz']) {
        const res = await fetch(`${deployerHealth}${path}`);
        expect(res.status, path).toBe(200);
        expect(await res.json()).toEqual({ status: 'ok' });
      }
    }
  });

  it('still serves a valid key from an address locked out by failed authentications', async () => {
    const http = new HttpClient(apiUrl, null);
    const attacker = from('198.51.100.70');
    for (let i = 0; i < FAILURES; i++)
      expect((await http.get('/v2/listeners', { key: `slw_${randomUUID()}`, headers: attacker })).status).toBe(401);
    const locked = await http.get('/v2/listeners', { key: `slw_${randomUUID()}`, headers: attacker });
    expect(locked.status).toBe(429);
    expect(locked.body.detail).toMatch(/^Too many failed authentications from this address/);
    expect(
      (await http.get('/v2/listeners', { key: await api.mintKey({ role: 'member' }), headers: attacker })).status,
    ).toBe(200);
  });
});
