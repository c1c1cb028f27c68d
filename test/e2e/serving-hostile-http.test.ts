import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyRepository } from '@slipway/db';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { deployBuiltApp } from '../support/built-revision.js';
import { Rng } from '../support/hostile-requests.js';
import { freePort } from '../support/ports.js';
import { exchange, rawRequest, type RawRequest } from '../support/raw-http.js';
import { serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * No request takes the serving path down (issue 32 item 1). A real deployer process serves two
 * deployments: an agent server (its serving URL wants a workspace key) and a plain app; both
 * echo what reached them and never answer 5xx themselves. Requests that are malformed but legal
 * (HTTP/1.0 without Host — which once ended the deployer and every tenant with it — several
 * Hosts, the absolute form, CONNECT, OPTIONS *, cut requests, control bytes) and then a seeded
 * raw-HTTP fuzzer are sent to the serving URLs as bytes. After each, the deployer is alive, its
 * /readyz answers, and the other deployment still serves. No answer is a 5xx (the apps never send
 * one, so any would be the proxy's own), and the deployer logs no failure of its own.
 *
 * Seeded: the seed is printed; SLIPWAY_RAW_FUZZ_SEED=<seed> generates the same requests again,
 * SLIPWAY_RAW_FUZZ_REQUESTS changes how many (default 10,000).
 */
const SEED = Number(process.env.SLIPWAY_RAW_FUZZ_SEED ?? randomInt(2 ** 31));
const REQUESTS = Number(process.env.SLIPWAY_RAW_FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = 16;
const PORT_MIN = 36_000 + Math.floor(Math.random() * 900);
const ENV = {
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99),
  // The fuzzer's key sends thousands of requests: its budget must not be what answers them.
  SLIPWAY_RATE_LIMIT_PER_KEY: '1000000',
  SLIPWAY_RATE_LIMIT_PER_ADDRESS: '1000000',
  SLIPWAY_RATE_LIMIT_AUTH_FAILURES: '1000000',
};

/** Echoes what reached it; never a 5xx. Upgrades switch to an echo protocol. */
const ECHO_APP = `import http from 'node:http';
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const body = JSON.stringify({ url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  req.on('error', () => undefined);
});
server.on('upgrade', (req, socket) => {
  socket.on('error', () => undefined);
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nupgrade: echo\\r\\nconnection: Upgrade\\r\\n\\r\\n');
  socket.end(JSON.stringify({ headers: req.headers }) + '\\n');
});
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

let api: TestApi;
let deployer: ServiceProcess;
let readyz: string;
let key: string;
/** An operator-chosen SLIPWAY_BOOTSTRAP_API_KEY: a workspace admin key without the `slw_` prefix. */
const operatorKey = `operator-chosen-${randomBytes(16).toString('hex')}`;
const ports = { agent: 0, plain: 0 };

async function deploy(name: string, agent: boolean): Promise<number> {
  return (await deployBuiltApp(api, name, ECHO_APP, agent ? { agent_server: { auth_path: null } } : {})).servingPort;
}

beforeAll(async () => {
  api = await startTestApi(ENV);
  api.relay.start();
  // Registered as the api registers SLIPWAY_BOOTSTRAP_API_KEY at start.
  expect((await new TenancyRepository(api.dataSource.manager).bootstrap(operatorKey)).registeredConfiguredKey).toBe(
    true,
  );
  const healthPort = await freePort();
  readyz = `http://127.0.0.1:${healthPort}/readyz`;
  deployer = await startService(
    'deployer',
    serviceEnv(api, { ...ENV, SLIPWAY_WORKER_HEALTH_PORT: String(healthPort), LOG_LEVEL: 'info' }),
  );
  [ports.agent, ports.plain] = await Promise.all([deploy('hostile-agent', true), deploy('hostile-plain', false)]);
  key = await api.mintKey({ role: 'member' });
}, 180_000);

afterAll(async () => {
  await deployer?.stop('SIGKILL');
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
}, 60_000);

function bytes(...lines: string[]): RawRequest {
  return { pieces: lines.map((l) => Buffer.from(l, 'latin1')), summary: JSON.stringify(lines.join('')) };
}

/** The deployer is alive and ready, and both deployments serve an ordinary request. */
async function everythingStillServes(): Promise<void> {
  expect(deployer.child.exitCode, deployer.output().slice(-2_000)).toBeNull();
  expect((await fetch(readyz)).status).toBe(200);
  expect((await fetch(`http://127.0.0.1:${ports.plain}/ok`)).status).toBe(200);
  expect((await fetch(`http://127.0.0.1:${ports.agent}/threads`, { headers: { 'x-api-key': key } })).status).toBe(200);
}

/** What the deployer logged of failures of its own: none is allowed. */
function ownFailures(): string[] {
  return deployer
    .output()
    .split('\n')
    .filter((l) => /unhandled promise rejection|uncaught exception|failed in the proxy itself/.test(l));
}

describe('requests that are malformed but legal', () => {
  const SHAPES: Array<[string, RawRequest, (statuses: number[]) => void]> = [
    ['HTTP/1.0 without Host', bytes('GET /ok HTTP/1.0\r\n\r\n'), (s) => expect(s).toEqual([200])],
    [
      'HTTP/1.0 without Host, not a probe',
      bytes('GET /threads HTTP/1.0\r\n\r\n'),
      (s) => expect(s[0]).toBeLessThan(500),
    ],
    [
      'an HTTP/1.0 Upgrade without Host',
      bytes('GET /ws HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n'),
      (s) => expect(s[0]).toBeLessThan(500),
    ],
    ['an empty Host', bytes('GET /ok HTTP/1.1\r\nHost:\r\n\r\n'), (s) => expect(s).toEqual([200])],
    ['several Hosts', bytes('GET /ok HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'), (s) => expect(s[0]).toBe(400)],
    [
      'the absolute form',
      bytes('GET http://elsewhere.example/ok HTTP/1.1\r\nHost: x\r\n\r\n'),
      (s) => expect(s).toEqual([200]),
    ],
    [
      'CONNECT',
      bytes('CONNECT 127.0.0.1:5432 HTTP/1.1\r\nHost: 127.0.0.1:5432\r\n\r\n'),
      (s) => expect(s).toEqual([405]),
    ],
    ['OPTIONS *', bytes('OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n'), (s) => expect(s[0]).toBeLessThan(500)],
    ['a request cut short', bytes('GET /ok HTTP/1.1\r\nHo'), (s) => expect(s.every((x) => x < 500)).toBe(true)],
    [
      'control bytes in X-Forwarded-Host',
      bytes('GET /ok HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: a\x01b\r\n\r\n'),
      (s) => expect(s).toEqual([400]),
    ],
    [
      'obs-text in X-Forwarded-Host',
      bytes('GET /ok HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: caf\xe9\r\n\r\n'),
      (s) => expect(s).toEqual([200]),
    ],
  ];

  for (const [name, request, check] of SHAPES) {
    it(`${name}: answered, and the deployer and every other serving URL keep answering`, async () => {
      for (const port of [ports.plain, ports.agent]) {
        const answer = await exchange(port, request);
        expect(answer.timedOut, answer.data).toBe(false);
        check(answer.statuses);
        await everythingStillServes();
      }
      expect(ownFailures()).toEqual([]);
    });
  }
});

describe('credentials never reach user code (issue 32 item 3)', () => {
  const echoed = async (port: number, headers: Record<string, string>) => {
    const res = await fetch(`http://127.0.0.1:${port}/echo`, { headers });
    return { status: res.status, headers: ((await res.json()) as { headers: Record<string, string> }).headers };
  };

  it('a plain app never sees a Slipway key, with or without the slw_ prefix; its own credentials pass untouched', async () => {
    const sent: Array<Record<string, string>> = [
      { 'x-api-key': operatorKey },
      { authorization: `Bearer ${operatorKey}` },
      { 'x-api-key': key },
      { authorization: `Bearer ${key}` },
    ];
    for (const headers of sent) {
      const seen = await echoed(ports.plain, headers);
      expect(seen.status).toBe(200);
      expect(seen.headers).not.toHaveProperty('x-api-key');
      expect(seen.headers).not.toHaveProperty('authorization');
      expect(JSON.stringify(seen.headers)).not.toContain(operatorKey);
    }
    const own = await echoed(ports.plain, { authorization: 'Bearer app-token-123', 'x-api-key': 'app-own-key' });
    expect(own.headers).toMatchObject({ authorization: 'Bearer app-token-123', 'x-api-key': 'app-own-key' });
    // A Slipway key in one header and the app's own credential in the other: only the key goes.
    const mixed = await echoed(ports.plain, { authorization: 'Bearer app-token-123', 'x-api-key': operatorKey });
    expect(mixed.headers).toMatchObject({ authorization: 'Bearer app-token-123' });
    expect(mixed.headers).not.toHaveProperty('x-api-key');
  });

  it('the operator-chosen key still opens an agent deployment, and is removed there too', async () => {
    const seen = await echoed(ports.agent, { 'x-api-key': operatorKey });
    expect(seen.status).toBe(200);
    expect(JSON.stringify(seen.headers)).not.toContain(operatorKey);
    expect((await echoed(ports.agent, { 'x-api-key': `not-${operatorKey}` })).status).toBe(401);
  });
});

describe('raw-HTTP fuzzer', () => {
  it(`${REQUESTS} generated requests: no crash, no 5xx, nothing left hanging`, async () => {
    console.log(`[raw-http fuzz] seed ${SEED} (SLIPWAY_RAW_FUZZ_SEED=${SEED} repeats it), ${REQUESTS} requests`);
    const rng = new Rng(SEED);
    const requests = Array.from({ length: REQUESTS }, () => ({
      request: rawRequest(rng, key),
      port: rng.chance(0.3) ? ports.agent : ports.plain,
    }));
    const failures: string[] = [];
    const tally = new Map<string, number>();
    const statuses = new Map<number, number>();
    let timedOut = 0;
    let next = 0;
    const lane = async () => {
      while (next < requests.length) {
        const n = next++;
        const { request, port } = requests[n]!;
        const answer = await exchange(port, request);
        if (answer.timedOut) timedOut++;
        for (const status of answer.statuses) {
          const bucket = `${Math.floor(status / 100)}xx`;
          tally.set(bucket, (tally.get(bucket) ?? 0) + 1);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status >= 500) failures.push(`#${n} ${status} for ${request.summary}: ${answer.data.slice(0, 300)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    console.log(
      `[raw-http fuzz] answers by status ${JSON.stringify(Object.fromEntries(statuses))}; ${timedOut} connections left open`,
    );
    expect(failures.slice(0, 10)).toEqual([]);
    // A connection the proxy left open is a resource one client could hold for ever.
    expect(timedOut).toBe(0);
    // Most requests must get past the parser, or the fuzzer would test Node's parser, not the proxy.
    expect(tally.get('2xx') ?? 0).toBeGreaterThan(REQUESTS / 5);
    await everythingStillServes();
    expect(ownFailures()).toEqual([]);
  }, 600_000);
});
