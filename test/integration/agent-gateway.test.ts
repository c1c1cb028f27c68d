import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeToken } from '@slipway/crypto';
import { TenancyRepository } from '@slipway/db';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The api's way to a deployed agent (`/v2/deployments/{id}/agent/…`, docs/api.md), against a
 * hostile app: a deployment row whose serving port is an HTTP server of this test, standing in
 * for what a deployment answers (the serving proxy in front of real instances is covered by the
 * console's browser test, which drives the Agent tab through this route against a deployed
 * agent). Only agent API paths go through, only JSON of bounded size comes back, none of the
 * app's headers, the caller's own key and client address travel under the edge's token, and
 * nothing of another workspace is reachable.
 */

let api: TestApi;
let app: http.Server;
let appPort: number;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  app = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const path = req.url!.split('?')[0];
      if (path === '/threads/html')
        return res.writeHead(200, { 'content-type': 'text/html' }).end('<script>steal()</script>');
      if (path === '/threads/fake-json')
        return res.writeHead(200, { 'content-type': 'application/json' }).end('<script>steal()</script>');
      if (path === '/threads/huge')
        return res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ pad: 'x'.repeat(9 * 1024 * 1024) }));
      if (path === '/threads/missing')
        return res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Thread not found"}');
      res.writeHead(200, {
        'content-type': 'application/json',
        'set-cookie': 'session=evil; Path=/',
        'x-evil': '1',
        'access-control-allow-origin': '*',
      });
      res.end(JSON.stringify({ ok: true, method: req.method, url: req.url, body: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  appPort = (app.address() as AddressInfo).port;
  api = await startTestApi();
}, 60_000);

afterAll(async () => {
  await api?.close();
  await new Promise((r) => app?.close(r));
});

/** A deployment whose serving port is `port` (the stand-in app), as a rollout leaves it. */
async function deploymentServedAt(port: number | null): Promise<string> {
  const res = await api.http.post('/v2/deployments', {
    name: `gw-${Math.random().toString(36).slice(2, 8)}`,
    source: 'external_container',
    source_config: {},
    source_revision_config: { image_uri: 'registry.example/agent:1' },
  });
  expect(res.status, res.text).toBe(201);
  if (port !== null)
    await api.dataSource.query(`UPDATE deployments SET serving_port = $2 WHERE id = $1`, [res.body.id, port]);
  return res.body.id;
}

describe('/v2/deployments/{id}/agent', () => {
  /** The deployment the stand-in app serves (a serving port belongs to one deployment). */
  let id: string;
  beforeAll(async () => {
    id = await deploymentServedAt(appPort);
  });

  it("forwards the caller's call with their key, under the edge's token, and answers with the agent's JSON only", async () => {
    seen.length = 0;
    const res = await fetch(`${api.baseUrl}/v2/deployments/${id}/agent/threads/search?limit=5&tag=a&tag=b`, {
      method: 'POST',
      headers: {
        'x-api-key': api.adminKey,
        'content-type': 'application/json',
        'x-agent-authorization': 'Bearer own-token',
      },
      body: JSON.stringify({ status: 'interrupted' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ok: true,
      method: 'POST',
      url: '/threads/search?limit=5&tag=a&tag=b',
      body: { status: 'interrupted' },
    });
    // None of the app's headers reach the console's origin.
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(res.headers.get('x-evil')).toBeNull();
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const [call] = seen;
    expect(call!.headers['x-api-key']).toBe(api.adminKey);
    expect(call!.headers.authorization).toBe('Bearer own-token');
    expect(call!.headers['x-slipway-edge']).toBe(edgeToken(api.config.secretsKey.key));
    expect(call!.headers['x-slipway-client-address']).toMatch(/127\.0\.0\.1/);
  });

  it("passes the agent's own errors on, and refuses what is not JSON or too large (502) while the api keeps serving", async () => {
    const get = (path: string) => api.http.get(`/v2/deployments/${id}/agent/${path}`);
    const missing = await get('threads/missing');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ message: 'Thread not found' });
    for (const path of ['threads/html', 'threads/fake-json', 'threads/huge']) {
      const res = await get(path);
      expect(res.status, path).toBe(502);
      expect(res.text).not.toContain('<script>');
    }
    expect((await get('threads/ok')).status).toBe(200);
  });

  it('goes nowhere but the LangGraph Server API paths, and to nothing of another workspace', async () => {
    seen.length = 0;
    for (const path of ['admin', 'ok', 'docs', '..%2Fthreads'])
      expect((await api.http.get(`/v2/deployments/${id}/agent/${path}`)).status, path).toBe(404);
    expect(seen).toEqual([]);
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(api.organizationId, 'gw-other');
    const theirs = await api.mintKey({ workspaceId: other.id, role: 'admin' });
    expect((await api.http.get(`/v2/deployments/${id}/agent/threads/ok`, { key: theirs })).status).toBe(404);
    expect((await api.http.get(`/v2/deployments/${id}/agent/threads/ok`, { key: null })).status).toBe(401);
    expect(seen).toEqual([]);
  });

  it('says 409 while nothing serves, and 502 when the deployment cannot be reached', async () => {
    expect((await api.http.get(`/v2/deployments/${await deploymentServedAt(null)}/agent/threads/ok`)).status).toBe(409);
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const res = await api.http.get(`/v2/deployments/${await deploymentServedAt(port)}/agent/threads/ok`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/could not be reached/);
  });
});
