import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'node:https';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { deployBuiltApp } from '../support/built-revision.js';
import { startPebble, writeDnsHook, type Pebble } from '../support/pebble.js';
import { freePort } from '../support/ports.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Certificates at the edge, automatically (docs/operations.md, The edge): real deployer and edge
 * processes, and pebble — the ACME test server — standing in for a public CA, with its DNS stub
 * standing in for the public DNS (every name resolves to 127.0.0.1, where the edge's HTTP port
 * answers pebble's HTTP-01 validation; the domain's TXT record is set there too). A deployment's
 * `custom_url` is verified, gets a certificate chained to pebble's root, served by SNI; HTTP goes
 * to HTTPS; a renewal swaps the certificate without a failed request; a CA that refuses leaves
 * the old certificate serving and the domain `failed` with the CA's error, which the edge's
 * `/metrics` shows beside each certificate's expiry. A second edge on an apps
 * domain of its own gets one wildcard certificate through an operator's DNS hook (DNS-01).
 */
const HOST = 'agent.example.test';
const PORT_MIN = 43_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = { SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN), SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99) };

const APP =
  `import http from 'node:http';
http.createServer((req, res) => {
  if (req.url === '/ok') return res.writeHead(200).end('ok');
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url, proto: ` +
  `req.headers['x-forwarded-proto'], host: req.headers.host }));
}).listen(Number(process.env.PORT));
`;

let pebble: Pebble;
let rootPem: string;
let api: TestApi;
let deployer: ServiceProcess;
let edge: ServiceProcess;
let ports: { http: number; https: number };
/** The edge's health port (its `/metrics`). */
let healthPort: number;
let deploymentId: string;

beforeAll(async () => {
  ports = { http: await freePort(), https: await freePort() };
  pebble = await startPebble({ httpPort: ports.http });
  rootPem = await pebble.rootPem();
  const env = {
    ...RUNTIME_ENV,
    SLIPWAY_EDGE_HTTP_PORT: String(ports.http),
    SLIPWAY_EDGE_HTTPS_PORT: String(ports.https),
    SLIPWAY_EDGE_HOST: '127.0.0.1',
    SLIPWAY_ACME_DIRECTORY_URL: pebble.directoryUrl,
    SLIPWAY_ACME_CA_FILE: pebble.caFile,
    SLIPWAY_ACME_EMAIL: 'ops@example.test',
    SLIPWAY_DOMAIN_DNS_SERVERS: pebble.dns.server,
    SLIPWAY_DOMAIN_VERIFY_INTERVAL_MS: '500',
  };
  api = await startTestApi(env);
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api, env));
  healthPort = await freePort();
  edge = await startService('edge', serviceEnv(api, { ...env, SLIPWAY_EDGE_HEALTH_PORT: String(healthPort) }));
  ({ deploymentId } = await deployBuiltApp(api, 'acme-app', APP));
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await deployer?.stop('SIGKILL');
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
  await pebble?.stop();
}, 60_000);

const domainOf = async () =>
  ((await api.http.get(`/v2/deployments/${deploymentId}/domains`)).body.resources as any[]).find(
    (d) => d.host === HOST,
  );

/** HOST's series in the edge's `/metrics`: its certificate's expiry (Unix seconds) and its failures, undefined when absent. */
async function certificateMetrics(): Promise<{ expiry?: number; failures?: number }> {
  const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
  const value = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`host="${HOST}"`));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  return {
    expiry: value('slipway_edge_certificate_expiry_timestamp_seconds'),
    failures: value('slipway_edge_certificate_failures'),
  };
}

/** A request over HTTPS on a new connection, by SNI, trusting pebble's root only. */
function overHttps(
  urlPath: string,
): Promise<{ status: number; body: string; serial: string; chain: X509Certificate[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: ports.https,
        path: urlPath,
        servername: HOST,
        headers: { host: HOST },
        ca: rootPem,
        agent: false,
      },
      (res) => {
        const socket = res.socket as import('node:tls').TLSSocket;
        const leaf = socket.getPeerX509Certificate()!;
        const chain: X509Certificate[] = [];
        for (
          let c: X509Certificate | undefined = leaf;
          c && chain.length < 5 && !chain.some((x) => x.fingerprint256 === c!.fingerprint256);
          c = c.issuerCertificate
        )
          chain.push(c);
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body, serial: leaf.serialNumber, chain }));
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** The serial the edge serves for HOST now (a bare handshake). */
function servedSerial(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: ports.https, servername: HOST, ca: rootPem }, () => {
      resolve(socket.getPeerX509Certificate()!.serialNumber);
      socket.end();
    });
    socket.once('error', reject);
  });
}

/** Makes the edge renew HOST now: its certificate past two thirds, and a change told to the edges (as a route change is). */
async function renewNow(): Promise<void> {
  // Not while an edge's pass holds the host: its end (the certificate saved, the lease released)
  // writes renew_after, over ours when it lands after it (seen under CI's load: no renewal came).
  await eventually(
    async () =>
      (
        await api.dataSource.query(
          `WITH due AS (UPDATE edge_certificates SET renew_after = now(), next_attempt_at = now()
             WHERE host = $1 AND leased_by IS NULL RETURNING host) SELECT count(*)::int AS n FROM due`,
          [HOST],
        )
      )[0].n as number,
    (n) => n === 1,
    30_000,
    100,
  );
  await api.dataSource.query(`SELECT pg_notify('slipway_edge_routes', $1)`, [deploymentId]);
}

describe('a custom_url with automatic certificates', () => {
  it('is verified by its TXT record, gets a certificate chained to the CA root, and is served over HTTPS by SNI', async () => {
    const patched = await api.http.patch(`/v2/deployments/${deploymentId}`, {
      source_config: { custom_url: `https://${HOST}` },
    });
    expect(patched.status, patched.text).toBe(200);
    const pending = await domainOf();
    expect(pending).toMatchObject({ state: 'pending_verification', from_custom_url: true });
    await pebble.dns.setTxt(pending.verification.name, pending.verification.value);
    const active = await eventually(domainOf, (d) => d?.state === 'active' || d?.state === 'failed', 60_000, 250);
    expect(active, JSON.stringify(active)).toMatchObject({ state: 'active', error: null });

    const answer = await overHttps('/secure?x=1');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ url: '/secure?x=1', proto: 'https', host: HOST });
    // The edge sends the whole chain: the leaf and pebble's intermediate, which the root the client trusts issued.
    const [leaf, intermediate] = answer.chain;
    expect(leaf!.checkHost(HOST)).toBe(HOST);
    expect(leaf!.checkIssued(intermediate!)).toBe(true);
    expect(intermediate!.checkIssued(new X509Certificate(rootPem))).toBe(true);
    const events = (
      await api.http.get(`/v2/events?deployment_id=${deploymentId}&types=domain.state_changed`)
    ).body.resources.map((e: any) => e.data.to);
    expect(events).toEqual(['issuing', 'active']);
    // What an operator alerts on: the served leaf's expiry, and no failed attempt.
    expect(await certificateMetrics()).toEqual({
      expiry: Math.floor(new Date(leaf!.validTo).getTime() / 1000),
      failures: 0,
    });
  }, 90_000);

  it('sends plain HTTP to HTTPS once the certificate is in place', async () => {
    const data = await new Promise<string>((resolve) => {
      const socket = connect(ports.http, '127.0.0.1');
      let out = '';
      socket.on('data', (c) => (out += c));
      socket.on('close', () => resolve(out));
      socket.write(`GET /a?b=1 HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
    });
    expect(data).toMatch(/^HTTP\/1\.1 308 /);
    expect(data).toMatch(
      new RegExp(`\\r\\nlocation: https://${HOST.replaceAll('.', '\\.')}:${ports.https}/a\\?b=1\\r\\n`, 'i'),
    );
  });

  it('a renewal swaps the certificate without a failed request', async () => {
    const before = await servedSerial();
    let stop = false;
    const answers: number[] = [];
    const probing = (async () => {
      while (!stop) {
        answers.push(
          await overHttps('/probe').then(
            (a) => a.status,
            () => 0,
          ),
        );
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await renewNow();
    await eventually(servedSerial, (serial) => serial !== before, 60_000, 250);
    stop = true;
    await probing;
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    expect((await domainOf()).state).toBe('active');
  }, 90_000);

  it('a CA that refuses leaves the old certificate serving and the domain failed with its error', async () => {
    const serving = await servedSerial();
    await pebble.breakDns(HOST);
    try {
      await renewNow();
      const failed = await eventually(domainOf, (d) => d?.state === 'failed', 60_000, 250);
      // Pebble's words: its validation could not reach the host.
      expect(failed.error).toMatch(/127\.0\.0\.2|connection refused/);
      expect(await servedSerial()).toBe(serving);
      expect((await overHttps('/still')).status).toBe(200);
      // The metrics say so while the old certificate still serves: a failure counted, its expiry kept.
      const metrics = await certificateMetrics();
      expect(metrics.failures).toBeGreaterThanOrEqual(1);
      expect(metrics.expiry).toBeGreaterThan(Date.now() / 1000);
    } finally {
      await pebble.restoreDns(HOST);
    }
  }, 90_000);
});

describe('the apps domain with a DNS hook', () => {
  it('gets one wildcard certificate (DNS-01) and serves every deployment name over HTTPS with it', async () => {
    // A second edge replica, on an apps domain of its own, with the operator's DNS hook.
    const hookDir = mkdtempSync(path.join(tmpdir(), 'slipway-dns-hook-'));
    const own = { http: await freePort(), https: await freePort() };
    const wildcardEdge = await startService(
      'edge',
      serviceEnv(api, {
        ...RUNTIME_ENV,
        SLIPWAY_EDGE_HTTP_PORT: String(own.http),
        SLIPWAY_EDGE_HTTPS_PORT: String(own.https),
        SLIPWAY_EDGE_HOST: '127.0.0.1',
        SLIPWAY_APPS_DOMAIN: 'apps.example.test',
        SLIPWAY_ACME_DIRECTORY_URL: pebble.directoryUrl,
        SLIPWAY_ACME_CA_FILE: pebble.caFile,
        SLIPWAY_ACME_DNS_HOOK: writeDnsHook(hookDir),
        DNS_STUB_MANAGEMENT: pebble.dns.managementUrl,
        SLIPWAY_DOMAIN_DNS_SERVERS: pebble.dns.server,
      }),
    );
    try {
      const view = (await api.http.get(`/v2/deployments/${deploymentId}`)).body;
      const name = `${new URL(view.url).hostname.split('.')[0]}.apps.example.test`;
      const get = () =>
        new Promise<{ status: number; body: string; san?: string; chain: X509Certificate[] }>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port: own.https,
              path: '/hello',
              servername: name,
              headers: { host: name },
              ca: rootPem,
              agent: false,
            },
            (res) => {
              const leaf = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate()!;
              let body = '';
              res.on('data', (c) => (body += c));
              res.on('end', () =>
                resolve({
                  status: res.statusCode!,
                  body,
                  san: leaf.subjectAltName,
                  chain: [leaf, leaf.issuerCertificate!],
                }),
              );
            },
          );
          req.once('error', reject);
          req.end();
        });
      // Until the wildcard is in place, the handshake fails against pebble's root (no certificate for the name yet).
      const answer = await eventually(
        () => get().catch(() => null),
        (a) => a?.status === 200,
        60_000,
        500,
      );
      expect(answer!.san).toBe('DNS:*.apps.example.test');
      expect(answer!.chain[1]!.checkIssued(new X509Certificate(rootPem))).toBe(true);
      expect(JSON.parse(answer!.body)).toMatchObject({ url: '/hello', proto: 'https', host: name });
      expect(wildcardEdge.output()).toMatch(/obtained a certificate/);
      expect(wildcardEdge.output()).toContain('*.apps.example.test');
    } finally {
      await wildcardEdge.stop();
      rmSync(hookDir, { recursive: true, force: true });
    }
  }, 120_000);
});
