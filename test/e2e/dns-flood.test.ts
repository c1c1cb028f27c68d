import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { addBuiltRevision } from '../support/built-revision.js';
import { freePort } from '../support/ports.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A DNS flood from one sandbox leaves another deployment serving (issue 32), with a real
 * deployer process and the sandbox on (as root, as CI runs): the deployer's relay asks a
 * stand-in resolver of this test (SLIPWAY_SANDBOX_DNS_SERVERS, UDP on 127.0.0.1:<port>) that
 * answers `ok.test.` at once and never answers a `slow.test.` name, so every flooded query the
 * relay passes on holds one of its sockets until its 4 s timeout. Deployment A's app floods its
 * gateway's relay with `slow.test` queries from its sandbox as fast as it can; meanwhile
 * deployment B's app keeps resolving `ok.test` through its own gateway and serving.
 */
const PORT_MIN = 41_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = { SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN), SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99) };
const FLOOD_SECONDS = 10;
/** What B's app allows one resolve (one try): an answer held behind A's flood fails it. */
const RESOLVE_TIMEOUT_MS = 1_000;
/** The relay holds an unanswered query's socket this long (dns-relay.ts QUERY_TIMEOUT_MS). */
const RELAY_QUERY_TIMEOUT_MS = 4_000;
const OK_ADDRESS = '192.0.2.7';

/** The resolver named in the sandbox's /etc/resolv.conf: its gateway's relay. */
const APP_PRELUDE = `import http from 'node:http';
import { readFileSync } from 'node:fs';
const nameserver = /^nameserver\\s+(\\S+)/m.exec(readFileSync('/etc/resolv.conf', 'utf8'))[1];
const reply = (res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
`;

/**
 * `/flood?seconds=N`: raw `q<i>.slow.test` A queries to its relay, then the counts of what came
 * back. Its query builder repeats dns-relay.test.ts's: the app runs from its own artifact files
 * in the sandbox and imports nothing of this repository.
 */
const FLOOD_APP = `${APP_PRELUDE}import dgram from 'node:dgram';
function query(id, name) {
  const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header[2] = 0x01;
  header.writeUInt16BE(1, 4);
  return Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}
async function flood(seconds) {
  const socket = dgram.createSocket('udp4');
  const counts = { nameserver, sent: 0, refused: 0, otherAnswers: 0, sendErrors: 0 };
  socket.on('message', (m) => ((m[3] & 0x0f) === 5 ? counts.refused++ : counts.otherAnswers++));
  socket.on('error', () => counts.sendErrors++);
  await new Promise((resolve) => socket.bind(0, resolve));
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    for (let i = 0; i < 100; i++) socket.send(query(counts.sent & 0xffff, 'q' + counts.sent++ + '.slow.test'), 53, nameserver);
    // Only long enough for the sends to leave: as fast as one process can.
    await new Promise((resolve) => setImmediate(resolve));
  }
  // Refusals are immediate; what the relay passed on stays unanswered.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  socket.close();
  return counts;
}
http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/flood') return reply(res, await flood(Number(url.searchParams.get('seconds'))));
  reply(res, { ok: true });
}).listen(Number(process.env.PORT));
`;

/** `/resolve`: resolves `ok.test` through its relay (one try of ${RESOLVE_TIMEOUT_MS} ms) and says what it got and how long it took. */
const RESOLVE_APP = `${APP_PRELUDE}import { Resolver } from 'node:dns/promises';
const resolver = new Resolver({ timeout: ${RESOLVE_TIMEOUT_MS}, tries: 1 });
resolver.setServers([nameserver]);
http.createServer(async (req, res) => {
  if (req.url !== '/resolve') return reply(res, { ok: true });
  const started = performance.now();
  const got = await resolver.resolve4('ok.test').then((addresses) => ({ addresses }), (err) => ({ error: err.code ?? String(err) }));
  reply(res, { ...got, ms: Math.round(performance.now() - started) });
}).listen(Number(process.env.PORT));
`;

/**
 * The stand-in resolver: `ok.test` gets an A record at once; a `slow.test` name is only
 * recorded (when it arrived), never answered — an upstream that hangs.
 */
function standInResolver(socket: Socket, seen: { ok: number; slowAt: number[] }): void {
  socket.on('message', (query, from) => {
    let end = 12;
    const labels: string[] = [];
    while (end < query.length && query[end] !== 0) {
      labels.push(
        query
          .subarray(end + 1, end + 1 + query[end]!)
          .toString()
          .toLowerCase(),
      );
      end += 1 + query[end]!;
    }
    end += 1 + 4;
    const name = labels.join('.');
    if (name.endsWith('slow.test')) return void seen.slowAt.push(Date.now());
    if (name !== 'ok.test' || end > query.length) return;
    seen.ok++;
    const header = Buffer.from(query.subarray(0, end));
    header[2] = 0x80 | (query[2]! & 0x01); // QR, RD echoed
    header[3] = 0x80; // RA, NOERROR
    header.writeUInt16BE(1, 6); // one answer, no authority or additional records (an EDNS OPT is dropped)
    header.fill(0, 8, 12);
    const record = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...OK_ADDRESS.split('.').map(Number)]);
    socket.send(Buffer.concat([header, record]), from.port, from.address);
  });
}

let api: TestApi;
let deployer: ServiceProcess;
let deployerHealth: string;
const resolver = createSocket('udp4');
const upstreamSeen = { ok: 0, slowAt: [] as number[] };
let floodUrl: string;
let neighbourUrl: string;

/** A new upload deployment serving `server`, rolled out by the deployer; its serving URL. */
async function deploy(name: string, server: string): Promise<string> {
  const created = await api.http.post('/v2/deployments', {
    name,
    source: 'upload',
    source_config: {},
    source_revision_config: {},
  });
  expect(created.status, created.text).toBe(201);
  const revision = await addBuiltRevision(api, created.body.id, server);
  const settled = await eventually(
    async () => (await api.http.get(`/v2/deployments/${created.body.id}/revisions/${revision}`)).body,
    (r) => ['DEPLOYED', 'DEPLOY_FAILED', 'CREATE_FAILED'].includes(r.status),
    90_000,
    200,
  );
  expect(settled.status, settled.status_message).toBe('DEPLOYED');
  const [{ serving_port }] = await api.dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [
    created.body.id,
  ]);
  return `http://127.0.0.1:${serving_port}`;
}

beforeAll(async () => {
  standInResolver(resolver, upstreamSeen);
  await new Promise<void>((resolve) => resolver.bind(0, '127.0.0.1', resolve));
  api = await startTestApi(RUNTIME_ENV);
  api.relay.start();
  const healthPort = await freePort();
  deployerHealth = `http://127.0.0.1:${healthPort}`;
  deployer = await startService(
    'deployer',
    serviceEnv(api, {
      ...RUNTIME_ENV,
      SLIPWAY_WORKER_HEALTH_PORT: String(healthPort),
      SLIPWAY_SANDBOX_DNS_SERVERS: `127.0.0.1:${resolver.address().port}`,
    }),
  );
  // Unsandboxed there is no relay to flood: fail, as the other sandbox end-to-end tests do.
  expect(deployer.output()).not.toMatch(/UNSANDBOXED|sandbox is unavailable/i);
  [floodUrl, neighbourUrl] = await Promise.all([
    deploy('dns-flooder', FLOOD_APP),
    deploy('dns-neighbour', RESOLVE_APP),
  ]);
}, 150_000);

afterAll(async () => {
  await deployer?.stop('SIGKILL');
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
  resolver.close();
}, 60_000);

const getJson = async (url: string) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) }).catch((err: Error) => ({
    status: 0,
    json: async () => ({ error: err.message }),
  }));
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};

describe('a DNS flood from one sandbox', () => {
  it("leaves another deployment serving and resolving fast, the deployer ready, and is refused past the sandbox's bound", async () => {
    // Before: B resolves through the stand-in (SLIPWAY_SANDBOX_DNS_SERVERS is what the relay asks).
    const before = await getJson(`${neighbourUrl}/resolve`);
    expect(before.body, JSON.stringify(before.body)).toMatchObject({ addresses: [OK_ADDRESS] });
    expect(upstreamSeen.ok).toBeGreaterThan(0);

    const floodStarted = Date.now();
    const floodDone = fetch(`${floodUrl}/flood?seconds=${FLOOD_SECONDS}`, {
      signal: AbortSignal.timeout((FLOOD_SECONDS + 20) * 1000),
    }).then((r) => r.json());
    const probes: Array<{ at: number; serving: number; resolve: any; ready: number }> = [];
    while (Date.now() - floodStarted < FLOOD_SECONDS * 1000) {
      const [serving, resolve, ready] = await Promise.all([
        getJson(`${neighbourUrl}/ok`),
        getJson(`${neighbourUrl}/resolve`),
        getJson(`${deployerHealth}/readyz`),
      ]);
      probes.push({
        at: Date.now() - floodStarted,
        serving: serving.status,
        resolve: resolve.body,
        ready: ready.status,
      });
      await new Promise((r) => setTimeout(r, 100));
    }
    const flood = (await floodDone) as {
      nameserver: string;
      sent: number;
      refused: number;
      otherAnswers: number;
      sendErrors: number;
    };

    // B served and resolved every time, each answer well inside one try; the deployer stayed ready.
    expect(probes.length).toBeGreaterThan(FLOOD_SECONDS * 2);
    expect(
      probes.filter((p) => p.serving !== 200 || p.ready !== 200 || !p.resolve?.addresses?.includes(OK_ADDRESS)),
    ).toEqual([]);
    expect(Math.max(...probes.map((p) => p.resolve.ms))).toBeLessThan(RESOLVE_TIMEOUT_MS);

    // A sent thousands; past its bound the relay refused them at once, and none got an answer otherwise.
    const bound = api.config.sandbox.dns.maxInflightPerSandbox;
    expect(flood.sent, JSON.stringify(flood)).toBeGreaterThan(2_000);
    expect(flood.refused, JSON.stringify(flood)).toBeGreaterThan(1_000);
    expect(flood.otherAnswers).toBe(0);
    // The stand-in never held more of A's queries than the bound: a slot frees only after the
    // relay's timeout, so no window shorter than it sees more arrivals (a margin for delivery).
    const slowAt = upstreamSeen.slowAt;
    let peak = 0;
    for (let i = 0, j = 0; i < slowAt.length; i++) {
      while (slowAt[i]! - slowAt[j]! >= RELAY_QUERY_TIMEOUT_MS - 500) j++;
      peak = Math.max(peak, i - j + 1);
    }
    expect(slowAt.length).toBeGreaterThanOrEqual(bound);
    expect(peak).toBe(bound);
    expect(flood.refused + slowAt.length).toBeLessThanOrEqual(flood.sent);
    expect(deployer.child.exitCode).toBeNull();
  }, 60_000);
});
