import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { backendOf, PushLedger, startPushGuard, uploadRequest, type RoomSource } from './push-guard.js';

const repo = '0b0e7f2c-3f0a-4c57-9a7e-2f4d3c1b5a69/web';

describe('uploadRequest', () => {
  it('names the requests that bring bytes, and nothing else', () => {
    expect(uploadRequest('POST', `/v2/${repo}/blobs/uploads/`)).toEqual({
      kind: 'start',
      repository: repo,
      uuid: null,
    });
    expect(uploadRequest('PATCH', `/v2/${repo}/blobs/uploads/abc`)).toEqual({
      kind: 'chunk',
      repository: repo,
      uuid: 'abc',
    });
    expect(uploadRequest('PUT', `/v2/${repo}/blobs/uploads/abc`)).toEqual({
      kind: 'finish',
      repository: repo,
      uuid: 'abc',
    });
    expect(uploadRequest('PUT', `/v2/${repo}/manifests/v1`)).toEqual({
      kind: 'manifest',
      repository: repo,
      uuid: null,
    });
    for (const [method, path] of [
      ['GET', `/v2/${repo}/blobs/uploads/abc`],
      ['DELETE', `/v2/${repo}/blobs/uploads/abc`],
      ['GET', `/v2/${repo}/manifests/v1`],
      ['HEAD', `/v2/${repo}/blobs/sha256:00`],
      ['GET', '/v2/'],
    ] as const) {
      expect(uploadRequest(method, path)).toBeNull();
    }
  });
});

describe('PushLedger', () => {
  it('counts streaming bytes, unfinished uploads and finished blobs until their events are recorded, per workspace', () => {
    const ledger = new PushLedger();
    ledger.stream('a', 100);
    ledger.setSession('u1', 'a', 50);
    ledger.finished('a', 'sha256:1', 30);
    ledger.setSession('u2', 'b', 7);
    expect(ledger.pending('a')).toBe(180);
    expect(ledger.pending('b')).toBe(7);
    ledger.stream('a', -100);
    ledger.dropSession('u1');
    expect(ledger.recentDigests('a')).toEqual(['sha256:1']);
    ledger.recorded('a', ['sha256:1']);
    expect(ledger.pending('a')).toBe(0);
  });

  it('forgets an upload idle for an hour', () => {
    const ledger = new PushLedger();
    ledger.setSession('u1', 'a', 50);
    expect(ledger.pending('a', Date.now() + 61 * 60_000)).toBe(0);
  });
});

describe('startPushGuard with a TCP upstream (`slipway registry-guard`)', () => {
  it('names the upstream by socket or by http URL', () => {
    expect(backendOf({ backendSocket: '/x/distribution.sock' })).toEqual({ socketPath: '/x/distribution.sock' });
    expect(backendOf({ backendUrl: 'http://127.0.0.1:5001' })).toEqual({ host: '127.0.0.1', port: 5001 });
    expect(backendOf({ backendUrl: 'http://[::1]:5001/' })).toEqual({ host: '::1', port: 5001 });
    expect(() => backendOf({ backendUrl: 'https://registry:5001' })).toThrow(/plain http/);
    expect(() => backendOf({})).toThrow();
  });

  it('forwards to distribution at host:port and refuses a push past registry_bytes there', async () => {
    const seen: { method: string; url: string; bytes: number; host?: string }[] = [];
    // A stand-in for distribution: 401 on /v2/, 202 with a Range on upload chunks.
    const upstream = http.createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, bytes, host: req.headers.host });
        if (req.url === '/v2/') return void res.writeHead(401).end();
        if (req.method === 'POST')
          return void res.writeHead(202, { 'docker-upload-uuid': 'u1', location: `${req.url}u1`, range: '0-0' }).end();
        if (req.method === 'PATCH') return void res.writeHead(202, { range: `0-${bytes - 1}` }).end();
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    const upstreamPort = (upstream.address() as AddressInfo).port;
    const rooms: RoomSource = {
      workspaceOf: async () => 'ws-1',
      room: async () => ({ quotaBytes: 1_000, usedBytes: 400, recordedDigests: [] }),
    };
    const guard = await startPushGuard({
      host: '127.0.0.1',
      port: 0,
      backendUrl: `http://127.0.0.1:${upstreamPort}`,
      rooms,
    });
    const base = `http://127.0.0.1:${(guard.server.address() as AddressInfo).port}`;
    const auth = { authorization: 'Bearer t' };
    try {
      expect((await fetch(`${base}/v2/`)).status).toBe(401);
      const start = await fetch(`${base}/v2/${repo}/blobs/uploads/`, { method: 'POST', headers: auth });
      expect(start.status).toBe(202);
      expect(start.headers.get('docker-upload-uuid')).toBe('u1');
      const fits = await fetch(`${base}/v2/${repo}/blobs/uploads/u1`, {
        method: 'PATCH',
        headers: auth,
        body: Buffer.alloc(500),
      });
      expect(fits.status).toBe(202);
      expect(guard.ledger.pending('ws-1')).toBe(500);
      // 400 stored + 500 in the upload + 200 more > 1000.
      const over = await fetch(`${base}/v2/${repo}/blobs/uploads/u1`, {
        method: 'PATCH',
        headers: auth,
        body: Buffer.alloc(200),
      });
      expect(over.status).toBe(403);
      expect(((await over.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('DENIED');
      await new Promise((r) => setTimeout(r, 100));
      expect(seen.filter((r) => r.method === 'PATCH').map((r) => r.bytes)).toEqual([500]);
      // The refused upload is cancelled at distribution, over the same TCP upstream.
      expect(seen.some((r) => r.method === 'DELETE' && r.url === `/v2/${repo}/blobs/uploads/u1`)).toBe(true);
      // The client's Host is kept: distribution's Locations name the guard's address.
      expect(seen[0]!.host).toBe(new URL(base).host);
    } finally {
      await guard.close();
      await new Promise<void>((r) => upstream.close(() => r()));
    }
  });
});
