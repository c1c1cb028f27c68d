import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { request as tlsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeRouteRepository } from '@slipway/db';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { addBuiltRevision, deployBuiltApp } from '../support/built-revision.js';
import { startDnsStub, type DnsStub } from '../support/dns-stub.js';
import { Rng } from '../support/hostile-requests.js';
import { freePort } from '../support/ports.js';
import { exchange, rawRequest, sendRaw } from '../support/raw-http.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The edge end to end (docs/operations.md, The edge): real deployer and edge processes serve
 * built revisions in the sandbox at `<name>.localhost:<edge port>`, reached through the
 * system's resolver as the SDK and CLIs reach them. A plain app (no key) and an agent server
 * (its workspace's key required, never seen by the app) answer there; a rollout behind the edge
 * fails no request; unknown hosts, missing and doubled `Host` headers, CONNECT, absolute-form
 * targets, cut requests and a raw-HTTP fuzz leave it serving.
 */
const PORT_MIN = 41_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = { SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN), SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99) };
const PER_ADDRESS = 6;
const LIMITS_ENV = { SLIPWAY_RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS), SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: '60' };
const FUZZ_SEED = Number(process.env.SLIPWAY_RAW_FUZZ_SEED ?? randomInt(2 ** 31));
const FUZZ_REQUESTS = Number(process.env.SLIPWAY_EDGE_FUZZ_REQUESTS ?? 1_500);

/** Echoes what reached it; `VERSION` tells revisions apart. */
const echoApp = (version: string) => `import http from 'node:http';
const server = http.createServer((req, res) => {
  if (req.url === '/ok') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  const body = JSON.stringify({ version: ${JSON.stringify(version)}, url: req.url, headers: req.headers });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
});
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

let api: TestApi;
let deployer: ServiceProcess;
let edge: ServiceProcess;
let edgePort: number;
let healthPort: number;
let key: string;
let dns: DnsStub;
const apps = { plain: { id: '', url: '', host: '' }, agent: { id: '', url: '', host: '' } };

beforeAll(async () => {
  edgePort = await freePort();
  healthPort = await freePort();
  const EDGE_ENV = { SLIPWAY_EDGE_HTTP_PORT: String(edgePort), SLIPWAY_EDGE_HOST: '127.0.0.1' };
  api = await startTestApi({ ...RUNTIME_ENV, ...EDGE_ENV });
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api, { ...RUNTIME_ENV, ...LIMITS_ENV }));
  // The public DNS a custom domain's owner publishes its verification record in.
  dns = await startDnsStub();
  // Started before any deployment exists: every route below reaches it as a change, not at start.
  edge = await startService(
    'edge',
    serviceEnv(api, {
      ...RUNTIME_ENV,
      SLIPWAY_DOMAIN_DNS_SERVERS: dns.server,
      SLIPWAY_DOMAIN_VERIFY_INTERVAL_MS: '500',
      SLIPWAY_EDGE_HEALTH_PORT: String(healthPort),
    }),
  );
  for (const [which, manifest] of [
    ['plain', { agent_server: undefined }],
    ['agent', { agent_server: { auth_path: null } }],
  ] as const) {
    const { deploymentId } = await deployBuiltApp(api, `edge-${which}`, echoApp('v1'), manifest);
    const view = (await api.http.get(`/v2/deployments/${deploymentId}`)).body;
    apps[which] = { id: deploymentId, url: view.url, host: new URL(view.url).host };
  }
  key = await api.mintKey({ role: 'member' });
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await dns?.stop();
  await deployer?.stop('SIGKILL');
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
}, 60_000);

/** A request through the system resolver (`<name>.localhost`), as the SDK makes it. */
async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body };
}

/** Raw bytes to the edge on a new connection; what came back once the edge closed or went quiet. */
const raw = async (text: string, waitMs = 2_000): Promise<string> => (await sendRaw(edgePort, text, { waitMs })).data;

/** A keyless request to the agent through the edge from `localAddress` (a loopback address of its own). */
function fromAddress(localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: edgePort,
        path: '/threads',
        localAddress,
        headers: { host: apps.agent.host },
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode!);
      },
    );
    req.once('error', reject);
    req.end();
  });
}

const statusOf = (data: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0);

async function stillServes(): Promise<void> {
  expect((await get(`${apps.plain.url}/still`)).status).toBe(200);
  expect(edge.child.exitCode).toBeNull();
  expect(edge.output()).not.toMatch(/"level":(50|60)/);
}

describe('names', () => {
  it("a deployment's url is its name under the apps domain at the edge", () => {
    expect(apps.plain.url).toBe(`http://edge-plain.localhost:${edgePort}`);
    expect(apps.agent.url).toBe(`http://edge-agent.localhost:${edgePort}`);
  });

  it('the plain app answers at its name, through the system resolver', async () => {
    const answer = await get(`${apps.plain.url}/hello?x=1`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ version: 'v1', url: '/hello?x=1' });
    // The app sees its public name and scheme, and never the edge's own headers.
    expect(answer.body.headers).toMatchObject({
      host: apps.plain.host,
      'x-forwarded-host': apps.plain.host,
      'x-forwarded-proto': 'http',
    });
    expect(Object.keys(answer.body.headers).filter((h) => h.startsWith('x-slipway'))).toEqual([]);
  });

  it('the agent server still demands its key at the edge, and its app never sees it', async () => {
    expect((await get(`${apps.agent.url}/threads`)).status).toBe(401);
    const answer = await get(`${apps.agent.url}/threads`, { 'x-api-key': key });
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body.headers)).not.toContain(key);
    expect(Object.keys(answer.body.headers).filter((h) => h.startsWith('x-slipway'))).toEqual([]);
  });

  it('budgets count per client address behind the edge, and a forged edge header counts for nothing', async () => {
    // Every keyless request is charged to its address: one client's exhausted budget is not another's.
    const first: number[] = [];
    for (let i = 0; i <= PER_ADDRESS; i++) first.push(await fromAddress('127.0.0.2'));
    expect(first.slice(0, PER_ADDRESS).every((s) => s === 401)).toBe(true);
    expect(first[PER_ADDRESS]).toBe(429);
    expect(await fromAddress('127.0.0.3')).toBe(401);
    // Straight to the serving port, naming another client address without the edge's token: still this socket's budget.
    const [{ serving_port: port }] = await api.dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [
      apps.agent.id,
    ]);
    const forged: number[] = [];
    for (let i = 0; i <= PER_ADDRESS; i++) {
      forged.push(
        await new Promise<number>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port,
              path: '/threads',
              localAddress: '127.0.0.4',
              agent: false,
              headers: { 'x-slipway-edge': 'forged', 'x-slipway-client-address': `10.9.9.${i}` },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode!);
            },
          );
          req.once('error', reject);
          req.end();
        }),
      );
    }
    expect(forged[PER_ADDRESS]).toBe(429);
  });
});

describe("the edge's health port", () => {
  const health = async (path: string, method = 'GET') => {
    const res = await fetch(`http://127.0.0.1:${healthPort}${path}`, { method });
    return { status: res.status, text: await res.text() };
  };
  const counted = async (listener: string, outcome: string) => {
    const line = (await health('/metrics')).text
      .split('\n')
      .find(
        (l) =>
          l.startsWith(`slipway_edge_requests_total{`) &&
          l.includes(`listener="${listener}"`) &&
          l.includes(`outcome="${outcome}"`),
      );
    return Number(line?.split(' ').at(-1) ?? NaN);
  };

  it('answers /healthz and /readyz, and counts each request by its outcome in /metrics', async () => {
    expect(await health('/healthz')).toEqual({ status: 200, text: '{"status":"ok"}' });
    expect(await health('/readyz')).toEqual({ status: 200, text: '{"status":"ok"}' });
    expect((await health('/metrics', 'POST')).status).toBe(405);
    expect((await health('/nothing')).status).toBe(404);
    const metrics = (await health('/metrics')).text;
    expect(metrics).toMatch(/^slipway_edge_routes\{service="edge"\} [1-9]/m);
    expect(metrics).toContain('slipway_process_cpu_user_seconds_total');

    const before = {
      unknown: await counted('http', 'unknown_host'),
      noHost: await counted('http', 'no_host'),
      forwarded: await counted('http', 'forwarded'),
    };
    expect(Number.isFinite(before.unknown) && Number.isFinite(before.forwarded)).toBe(true);
    await raw('GET / HTTP/1.1\r\nHost: nobody.localhost\r\nConnection: close\r\n\r\n');
    await raw('GET /ok HTTP/1.0\r\n\r\n');
    await stillServes();
    expect(await counted('http', 'unknown_host')).toBe(before.unknown + 1);
    expect(await counted('http', 'no_host')).toBe(before.noHost + 1);
    expect(await counted('http', 'forwarded')).toBeGreaterThan(before.forwarded);
  });
});

describe('what the edge refuses', () => {
  it('an unknown host gets 404 naming nothing', async () => {
    for (const host of [
      'nobody.localhost',
      `x.${apps.plain.host}`,
      'example.com',
      apps.plain.host.replace('edge-plain', 'edge-plain-ffffff'),
    ]) {
      const data = await raw(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect(statusOf(data), host).toBe(404);
      expect(data.slice(data.indexOf('\r\n\r\n') + 4)).toBe('{"detail":"Not found."}');
    }
  });

  it('no Host (HTTP/1.0) and two Host headers get 400, CONNECT 405, and the edge keeps serving', async () => {
    expect(statusOf(await raw('GET /ok HTTP/1.0\r\n\r\n'))).toBe(400);
    expect(statusOf(await raw(`GET / HTTP/1.1\r\nHost: ${apps.plain.host}\r\nHost: ${apps.agent.host}\r\n\r\n`))).toBe(
      400,
    );
    expect(statusOf(await raw(`CONNECT ${apps.plain.host}:443 HTTP/1.1\r\nHost: ${apps.plain.host}\r\n\r\n`))).toBe(
      405,
    );
    await stillServes();
  });

  it('an absolute-form target is routed by its own host, and reaches the app as a path', async () => {
    const data = await raw(
      `GET http://${apps.plain.host}/abs?q=1 HTTP/1.1\r\nHost: nobody.localhost\r\nConnection: close\r\n\r\n`,
    );
    expect(statusOf(data)).toBe(200);
    expect(JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4))).toMatchObject({
      url: '/abs?q=1',
      headers: { host: apps.plain.host },
    });
  });

  it('a request cut mid-headers or mid-body leaves the edge serving', async () => {
    await raw(`GET / HTTP/1.1\r\nHost: ${apps.plain.host}\r\nX-Cut: par`, 300);
    await raw(`POST /x HTTP/1.1\r\nHost: ${apps.plain.host}\r\nContent-Length: 1000\r\n\r\nonly-this`, 300);
    await stillServes();
  });

  it(`${FUZZ_REQUESTS} generated raw requests: no 5xx, no crash, nothing left hanging`, async () => {
    console.log(`[edge raw fuzz] seed ${FUZZ_SEED} (SLIPWAY_RAW_FUZZ_SEED=${FUZZ_SEED} repeats it)`);
    const rng = new Rng(FUZZ_SEED);
    const requests = Array.from({ length: FUZZ_REQUESTS }, () =>
      rawRequest(rng, key, rng.chance(0.3) ? apps.agent.host : apps.plain.host),
    );
    const failures: string[] = [];
    let timedOut = 0;
    let ok = 0;
    let next = 0;
    const lane = async () => {
      while (next < requests.length) {
        const n = next++;
        const answer = await exchange(edgePort, requests[n]!);
        if (answer.timedOut) timedOut++;
        for (const status of answer.statuses) {
          if (status >= 500) failures.push(`#${n} ${status} for ${requests[n]!.summary}: ${answer.data.slice(0, 300)}`);
          if (status < 300) ok++;
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, lane));
    if (failures.length)
      console.log(`[edge raw fuzz] ${failures.length} answers of 5xx:\n${failures.slice(0, 10).join('\n')}`);
    expect(failures.slice(0, 10)).toEqual([]);
    expect(timedOut).toBe(0);
    // Most requests got past the parser into the edge and on to the apps.
    expect(ok).toBeGreaterThan(FUZZ_REQUESTS / 5);
    await stillServes();
  }, 600_000);
});

describe('custom domains', () => {
  /** What the edge answers for `host` (its Host header), straight to the edge's port. */
  const at = async (host: string, urlPath = '/') => {
    const data = await raw(`GET ${urlPath} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    const body = data.slice(data.indexOf('\r\n\r\n') + 4);
    return { status: statusOf(data), body };
  };
  const domains = async (id: string) => (await api.http.get(`/v2/deployments/${id}/domains`)).body.resources as any[];

  it('a claimed host is not routed until its TXT record proves it, then it is, without a restart', async () => {
    const host = `shop-${randomInt(1e9)}.example.test`;
    const claimed = await api.http.post(`/v2/deployments/${apps.plain.id}/domains`, { host });
    expect(claimed.status, claimed.text).toBe(201);
    expect((await at(host)).status).toBe(404);
    // A record with another value proves nothing: still pending, the error says what was found.
    await dns.setTxt(claimed.body.verification.name, 'slw-verify-someone-else');
    const pending = await eventually(
      () => domains(apps.plain.id),
      (all) => /does not hold/.test(all[0]?.error ?? ''),
      15_000,
      200,
    );
    expect(pending[0].state).toBe('pending_verification');
    expect((await at(host)).status).toBe(404);

    await dns.setTxt(claimed.body.verification.name, claimed.body.verification.value);
    const verified = await eventually(
      () => domains(apps.plain.id),
      (all) => all[0]?.state === 'active',
      15_000,
      200,
    );
    expect(verified[0]).toMatchObject({ host, error: null, verification: null });
    const routed = await eventually(
      () => at(host, '/custom'),
      (a) => a.status === 200,
      10_000,
      100,
    );
    expect(JSON.parse(routed.body)).toMatchObject({ url: '/custom', headers: { host } });
    const events = (await api.http.get(`/v2/events?deployment_id=${apps.plain.id}&types=domain.state_changed`)).body
      .resources;
    expect(events.at(-1)).toMatchObject({ data: { host, from: 'pending_verification', to: 'active' } });

    // Released: no longer routed.
    expect((await api.http.delete(`/v2/deployments/${apps.plain.id}/domains/${host}`)).status).toBe(204);
    await eventually(
      () => at(host),
      (a) => a.status === 404,
      10_000,
      100,
    );
  }, 60_000);
});

describe("with the operator's certificate", () => {
  let tlsEdge: ServiceProcess;
  let ports: { http: number; https: number };
  let ca: Buffer;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'edge-tls-'));
    const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=apps',
        '-addext',
        'subjectAltName=DNS:*.localhost,DNS:edge-plain.localhost',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    ca = readFileSync(cert);
    ports = { http: await freePort(), https: await freePort() };
    tlsEdge = await startService(
      'edge',
      serviceEnv(api, {
        ...RUNTIME_ENV,
        SLIPWAY_EDGE_HTTP_PORT: String(ports.http),
        SLIPWAY_EDGE_HTTPS_PORT: String(ports.https),
        SLIPWAY_EDGE_HOST: '127.0.0.1',
        SLIPWAY_TLS_CERT_FILE: cert,
        SLIPWAY_TLS_KEY_FILE: key,
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await tlsEdge?.stop();
  });

  // Node matches no wildcard of a two-label name (`*.localhost`): a host outside the listed names is checked against the CA only.
  const overTls = (host: string, urlPath: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const listed = host === 'edge-plain.localhost' ? {} : { checkServerIdentity: () => undefined };
      const req = tlsRequest(
        {
          host: '127.0.0.1',
          port: ports.https,
          path: urlPath,
          servername: host,
          headers: { host: `${host}:${ports.https}` },
          ca,
          agent: false,
          ...listed,
        },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.once('error', reject);
      req.end();
    });

  it('serves a deployment over HTTPS with the certificate, and tells the app the scheme', async () => {
    const answer = await overTls('edge-plain.localhost', '/secure');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).headers).toMatchObject({ 'x-forwarded-proto': 'https' });
    expect((await overTls('nobody.localhost', '/')).status).toBe(404);
  });

  it('sends plain HTTP requests for a deployment to HTTPS, path and query kept', async () => {
    const data = await new Promise<string>((resolve) => {
      const socket = connect(ports.http, '127.0.0.1');
      let out = '';
      socket.on('data', (c) => (out += c));
      socket.on('close', () => resolve(out));
      socket.write(`GET /a/b?c=1 HTTP/1.1\r\nHost: edge-plain.localhost:${ports.http}\r\nConnection: close\r\n\r\n`);
    });
    expect(statusOf(data)).toBe(308);
    expect(data).toMatch(
      new RegExp(`\\r\\nlocation: https://edge-plain\\.localhost:${ports.https}/a/b\\?c=1\\r\\n`, 'i'),
    );
  });
});

describe('changes reach the edge without a restart', () => {
  it('a rollout behind the edge under 100 ms probing fails no request', async () => {
    let stop = false;
    const seen: Array<{ status: number; version?: string }> = [];
    const probe = (async () => {
      while (!stop) {
        const answer = await get(`${apps.plain.url}/probe`).catch((err) => ({ status: 0, body: String(err) }));
        seen.push({ status: answer.status, version: answer.body?.version });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const revisionId = await addBuiltRevision(api, apps.plain.id, echoApp('v2'));
    await eventually(
      async () => (await api.http.get(`/v2/deployments/${apps.plain.id}/revisions/${revisionId}`)).body.status,
      (s) => ['DEPLOYED', 'DEPLOY_FAILED'].includes(s),
      90_000,
      200,
    );
    await eventually(
      () => seen.at(-1)?.version,
      (v) => v === 'v2',
      10_000,
    );
    stop = true;
    await probe;
    expect(seen.filter((s) => s.status !== 200)).toEqual([]);
    expect(seen.some((s) => s.version === 'v1')).toBe(true);
  }, 150_000);

  it("follows the runtime owner's announced address (a standby deployer's takeover)", async () => {
    const owners = new EdgeRouteRepository(api.dataSource.manager);
    expect(await owners.ownerAddress()).toBe('127.0.0.1');
    // Announced elsewhere (nothing of this machine listens on 127.0.0.9): requests fail there.
    await owners.recordOwner('127.0.0.9');
    await eventually(
      async () => (await get(`${apps.plain.url}/moved`)).status,
      (s) => s === 502,
      10_000,
      100,
    );
    await owners.recordOwner('127.0.0.1');
    await eventually(
      async () => (await get(`${apps.plain.url}/back`)).status,
      (s) => s === 200,
      10_000,
      100,
    );
  });

  it('a deleted deployment loses its name at the edge', async () => {
    expect((await api.http.delete(`/v2/deployments/${apps.agent.id}`)).status).toBe(204);
    await eventually(
      async () => (await get(`${apps.agent.url}/threads`, { 'x-api-key': key })).status,
      (s) => s === 404,
      60_000,
      200,
    );
  }, 90_000);
});
