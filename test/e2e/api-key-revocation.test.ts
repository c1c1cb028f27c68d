/**
 * Each api process caches API-key lookups briefly. A key revoked through one api process must be
 * refused by every other one within a second, whatever that process had cached: here the second
 * process is a real `services/api` process over the same database and Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../support/http.js';
import { freePort } from '../support/ports.js';
import { serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

const WITHIN_MS = 1_000;

let api: TestApi;
let other: ServiceProcess;
let otherHttp: HttpClient;

beforeAll(async () => {
  api = await startTestApi();
  const port = await freePort();
  other = await startService(
    'api',
    serviceEnv(api, {
      PORT: String(port),
      HOST: '127.0.0.1',
      // The test keeps using the revoked key on purpose: no lockout for failed authentications.
      SLIPWAY_RATE_LIMIT_AUTH_FAILURES: '0',
    }),
  );
  otherHttp = new HttpClient(`http://127.0.0.1:${port}`, api.adminKey);
}, 60_000);

afterAll(async () => {
  await other?.stop();
  await api?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('API key revocation across api processes', () => {
  it('refuses a key revoked through one process on the other within a second, despite its cache', async () => {
    const { body: created, status } = await api.http.post('/v2/api-keys', {
      description: 'revoked elsewhere',
      scope: 'workspace',
      role: 'member',
    });
    expect(status).toBe(201);
    const key: string = created.key;

    // Both processes have served (and so cached) the key.
    expect((await otherHttp.get('/v2/listeners', { key })).status).toBe(200);
    expect((await api.http.get('/v2/listeners', { key })).status).toBe(200);

    // The other process keeps using the key while it is revoked here.
    const seen: Array<{ startedAt: number; status: number }> = [];
    let revokedAt = Infinity;
    let stop = false;
    const hammer = (async () => {
      while (!stop) {
        const startedAt = Date.now();
        const res = await otherHttp.get('/v2/listeners', { key });
        seen.push({ startedAt, status: res.status });
        await sleep(20);
      }
    })();

    await sleep(200);
    const revoke = await api.http.delete(`/v2/api-keys/${created.id}`);
    revokedAt = Date.now();
    expect(revoke.status).toBe(204);
    // The revoking process forgets the key at once.
    expect((await api.http.get('/v2/listeners', { key })).status).toBe(401);

    await sleep(WITHIN_MS + 500);
    stop = true;
    await hammer;

    const before = seen.filter((s) => s.startedAt < revokedAt - 100);
    const late = seen.filter((s) => s.startedAt >= revokedAt + WITHIN_MS);
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((s) => s.status === 200)).toBe(true);
    expect(late.length).toBeGreaterThan(0);
    expect(late.map((s) => s.status)).toEqual(late.map(() => 401));
    // Once refused, it stays refused: nothing brings a revoked key back.
    const firstRefusal = seen.findIndex((s) => s.status === 401);
    expect(seen.slice(firstRefusal).every((s) => s.status === 401)).toBe(true);
    expect((await otherHttp.get('/v2/listeners', { key })).status).toBe(401);
  });
});
