import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutboundUrl, guardedFetch, OutboundError } from './guarded-fetch.js';

/** A real HTTP server on 127.0.0.1 (ephemeral port) plays the remote host. */
let server: Server;
let base = '';
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url!);
    if (req.url === '/redirect') return void res.writeHead(302, { Location: `${base}/secret` }).end();
    if (req.url === '/big') return void res.end(Buffer.alloc(64 * 1024, 'a'));
    if (req.url === '/hang') return; // never answers
    res
      .writeHead(200, { 'Content-Type': 'application/json', 'X-Seen-Host': String(req.headers.host) })
      .end('{"ok":true}');
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const allowLocal = { allowHosts: ['127.0.0.1'] };
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: OutboundError) => ({ code: err.code, message: err.message }),
  );

describe('guardedFetch', () => {
  it('fetches an allow-listed host over http', async () => {
    const res = await guardedFetch(`${base}/ok`, { policy: allowLocal });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ ok: true });
  });

  it('refuses loopback, private and metadata addresses before connecting', async () => {
    const before = hits.length;
    const https = base.replace('http:', 'https:');
    expect(await refusal(guardedFetch(`${https}/ok`, { policy: { allowHosts: [] } }))).toMatchObject({
      code: 'refused',
      message: expect.stringContaining('loopback'),
    });
    expect(await refusal(guardedFetch(`${base}/ok`, { policy: { allowHosts: [] } }))).toMatchObject({
      code: 'refused',
      message: expect.stringContaining('https'),
    });
    expect(
      await refusal(guardedFetch('https://169.254.169.254/latest/meta-data/', { policy: { allowHosts: [] } })),
    ).toMatchObject({ code: 'refused' });
    expect(await refusal(guardedFetch('https://[::ffff:127.0.0.1]/', { policy: { allowHosts: [] } }))).toMatchObject({
      code: 'refused',
    });
    expect(await refusal(guardedFetch('https://localhost/', { policy: { allowHosts: [] } }))).toMatchObject({
      code: 'refused',
      message: expect.stringMatching(/localhost resolves to/),
    });
    expect(await refusal(guardedFetch('file:///etc/passwd', { policy: allowLocal }))).toMatchObject({
      code: 'refused',
    });
    expect(await refusal(guardedFetch(`http://user:pw@127.0.0.1:1/`, { policy: allowLocal }))).toMatchObject({
      code: 'refused',
    });
    expect(hits.length).toBe(before);
  });

  it('never follows a redirect', async () => {
    const res = await guardedFetch(`${base}/redirect`, { policy: allowLocal });
    expect(res.status).toBe(302);
    expect(hits.at(-1)).toBe('/redirect');
  });

  it('caps the body and the time', async () => {
    expect(await refusal(guardedFetch(`${base}/big`, { policy: allowLocal, maxBodyBytes: 1024 }))).toMatchObject({
      code: 'too_large',
    });
    expect(await refusal(guardedFetch(`${base}/hang`, { policy: allowLocal, timeoutMs: 300 }))).toMatchObject({
      code: 'timeout',
    });
    // Still serving afterwards.
    expect((await guardedFetch(`${base}/ok`, { policy: allowLocal })).status).toBe(200);
  });

  it('connects to the checked address while sending the name as Host', async () => {
    const port = new URL(base).port;
    const res = await guardedFetch(`http://localhost:${port}/ok`, { policy: { allowHosts: ['localhost'] } });
    expect(res.headers.get('x-seen-host')).toBe(`localhost:${port}`);
  });
});

describe('checkOutboundUrl', () => {
  it('accepts an https URL whose name does not resolve (left to fetch time) only when not resolving', async () => {
    await expect(
      checkOutboundUrl('https://gitea.acme.example', { allowHosts: [] }, { resolve: false }),
    ).resolves.toMatchObject({ addresses: [] });
    expect(await refusal(checkOutboundUrl('https://gitea.acme.example', { allowHosts: [] }))).toMatchObject({
      code: 'unreachable',
    });
  });
});
