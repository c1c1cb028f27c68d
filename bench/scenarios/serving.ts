import path from 'node:path';
import { assertNoFailures, load, percentile, type LoadResult } from '../support/measure.js';
import { freePort, startProcess } from '../support/processes.js';
import { atLeast, atMost, type BenchRow } from '../support/report.js';
import { databaseUrl, REDIS, ROOT, type BenchStack } from '../support/stack.js';
import {
  closeKeptConnections,
  servernameOf,
  send,
  startCaddy,
  startNginx,
  statusOf,
  type Target,
} from '../support/serving-peers.js';
import { checkedHandshake, handshakesPerSecond, type TlsEndpoint } from '../support/tls-handshakes.js';
import type { DeployedApp } from './deploy.js';
import type { BenchOptions } from './options.js';

/** How much later than the instance's own the first byte of a stream may come through the serving URL. */
const SSE_MARGIN_MS = 5;

/** Clients making full TLS handshakes in parallel (serving: TLS handshakes). */
const HANDSHAKE_CLIENTS = 16;
/** The edge's handshakes a second, at least this share of nginx's. */
const HANDSHAKE_SHARE = 0.8;

const endpointOf = (t: Target): TlsEndpoint => {
  const u = new URL(t.url);
  return { host: u.hostname, port: Number(u.port), servername: servernameOf(t) ?? u.hostname };
};
/** A deployment's `url` at the edge (`https://<name>.bench.test:<port>`), reached at 127.0.0.1. */
const edgeTarget = (url: string): Target => {
  const u = new URL(url);
  return { url: `${u.protocol}//127.0.0.1:${u.port}`, host: u.host };
};

/** Milliseconds from sending a streamed run until the first byte of its SSE body (http or https, keep-alive). */
async function firstByte(target: Target, key: string): Promise<number> {
  const body = JSON.stringify({ assistant_id: 'agent', input: { steps: [] }, stream_mode: ['values'] });
  const started = performance.now();
  const res = await send(
    target,
    'POST',
    '/runs/stream',
    { 'content-type': 'application/json', 'x-api-key': key, 'content-length': Buffer.byteLength(body) },
    body,
  );
  if (res.statusCode !== 200) {
    res.resume();
    throw new Error(`${target.host ?? target.url}/runs/stream answered ${res.statusCode}`);
  }
  return new Promise((resolve, reject) => {
    res.once('data', () => resolve(performance.now() - started));
    res.once('error', reject);
    res.resume();
  });
}

type Measured = Pick<LoadResult, 'reqPerSec' | 'p99'>;
/** Rounds of every way in turn: three in a full run, one in a quick one. */
const roundsOf = (o: BenchOptions) => (o.durationSec >= 10 ? 3 : 1);
const untargeted = (row: BenchRow): BenchRow => ({ ...row, target: undefined, met: undefined });

/**
 * `GET <urlPath>` at 50 keep-alive connections on every way, in rounds (each way in turn, three
 * rounds in a full run), the median req/s and p99 of each: a busy spell on a shared machine then
 * lands on all of them instead of on whichever ran during it.
 */
async function loadInRounds<K extends string>(
  ways: Record<K, Target>,
  urlPath: string,
  headers: Record<string, string>,
  o: BenchOptions,
): Promise<Record<K, Measured>> {
  const names = Object.keys(ways) as K[];
  const rounds = roundsOf(o);
  const loads = Object.fromEntries(names.map((n) => [n, [] as LoadResult[]])) as Record<K, LoadResult[]>;
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const t: Target = ways[name];
      const res = await load({
        url: `${t.url}${urlPath}`,
        headers: { ...headers, ...(t.host ? { host: t.host } : {}) },
        servername: servernameOf(t),
        connections: 50,
        durationSec: o.durationSec,
        warmupSec: r === 0 ? o.warmupSec : 0,
      });
      assertNoFailures({ [`${name} (${t.host ?? t.url}${urlPath})`]: res });
      loads[name].push(res);
    }
  }
  const median = (n: K, of: (x: LoadResult) => number) => percentile(loads[n].map(of), 50);
  return Object.fromEntries(
    names.map((n) => [n, { reqPerSec: median(n, (x) => x.reqPerSec), p99: median(n, (x) => x.p99) }]),
  ) as Record<K, Measured>;
}

/** Plain HTTP: the serving URL's share of direct, at least nginx's; its p99, at most nginx's. */
function servingUrlRows(scenario: string, m: Record<'direct' | 'nginx' | 'serving', Measured>): BenchRow[] {
  const nginxShare = m.nginx.reqPerSec / m.direct.reqPerSec;
  return [
    untargeted(atLeast(scenario, 'nginx req/s vs direct', m.nginx.reqPerSec, m.direct.reqPerSec, 0)),
    {
      ...atLeast(
        scenario,
        'serving URL req/s vs direct',
        m.serving.reqPerSec,
        m.direct.reqPerSec,
        Number(nginxShare.toFixed(2)),
      ),
      target: `≥ nginx's ${nginxShare.toFixed(2)}`,
    },
    atMost(scenario, 'p99, serving URL vs nginx', m.serving.p99, m.nginx.p99, 1),
  ];
}

/**
 * Over HTTPS: the deployment's url at the edge (TLS, the edge, the serving proxy, the instance)
 * against nginx and Caddy terminating TLS straight to the instance. The edge's targets are the
 * better of its two peers: the higher share of direct, the lower p99.
 */
function edgeRows(scenario: string, m: Record<'direct' | 'nginxTls' | 'caddy' | 'edge', Measured>): BenchRow[] {
  const peers = [
    { name: 'nginx', ...m.nginxTls },
    { name: 'Caddy', ...m.caddy },
  ];
  const bestShare = peers.reduce((a, b) => (b.reqPerSec > a.reqPerSec ? b : a));
  const bestP99 = peers.reduce((a, b) => (b.p99 < a.p99 ? b : a));
  const share = bestShare.reqPerSec / m.direct.reqPerSec;
  return [
    untargeted(atLeast(scenario, 'nginx (TLS) req/s vs direct', m.nginxTls.reqPerSec, m.direct.reqPerSec, 0)),
    untargeted(atLeast(scenario, 'Caddy (TLS) req/s vs direct', m.caddy.reqPerSec, m.direct.reqPerSec, 0)),
    {
      ...atLeast(scenario, 'edge req/s vs direct', m.edge.reqPerSec, m.direct.reqPerSec, Number(share.toFixed(2))),
      target: `≥ ${bestShare.name}'s ${share.toFixed(2)}`,
    },
    untargeted(atMost(scenario, 'p99, nginx (TLS) vs direct', m.nginxTls.p99, m.direct.p99, Infinity)),
    untargeted(atMost(scenario, 'p99, Caddy (TLS) vs direct', m.caddy.p99, m.direct.p99, Infinity)),
    {
      ...atMost(scenario, `p99, edge vs the better peer (${bestP99.name})`, m.edge.p99, bestP99.p99, 1),
      target: `≤ ${bestP99.name}'s`,
    },
  ];
}

/**
 * The serving path for a plain app (issue: the proxy's own cost, hidden behind an agent
 * instance's): `GET /` of the smallest Node app (deployPlainApp) straight, behind Debian's nginx,
 * through its serving URL (the deployer's proxy; a plain app has no key check), and over HTTPS at
 * the edge against nginx and Caddy terminating TLS, in rounds as the agent's loads are.
 */
export async function plainServingScenario(stack: BenchStack, app: DeployedApp, o: BenchOptions): Promise<BenchRow[]> {
  const stops: Array<() => unknown> = [];
  try {
    const nginx = await startNginx(app.instanceUrl);
    stops.push(nginx.stop);
    const nginxTls = await startNginx(app.instanceUrl, { tls: stack.certificate });
    stops.push(nginxTls.stop);
    const caddy = await startCaddy(app.instanceUrl, stack.certificate);
    stops.push(caddy.stop);
    const ways = {
      direct: { url: app.instanceUrl },
      nginx: nginx.target,
      serving: { url: app.servingUrl },
      nginxTls: nginxTls.target,
      caddy: caddy.target,
      edge: edgeTarget(app.url),
    } satisfies Record<string, Target>;
    const m = await loadInRounds(ways, '/', {}, o);
    const scenario = 'serving a plain app: GET /';
    return [
      ...servingUrlRows(scenario, m),
      ...edgeRows(`${scenario}, HTTPS`, m),
      untargeted(atLeast(`${scenario}, HTTPS`, 'edge req/s vs serving URL', m.edge.reqPerSec, m.serving.reqPerSec, 0)),
    ];
  } finally {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => {});
  }
}

/**
 * The serving path: requests to a deployed agent through its serving URL (the deployer's proxy,
 * key check included) against the same instance straight, behind Debian's nginx, and behind
 * nginx with the key check as an `auth_request` to a Node process running the deployer's
 * ServingAuth (the alternative to the Node proxy, bench/history.md). Then over HTTPS: the
 * deployment's `url` at the edge (TLS with the stack's certificate, then the serving proxy, then
 * the instance) against nginx and Caddy terminating TLS with the same certificate in front of the
 * same instance, and against nginx terminating TLS with the `auth_request` key check (the edge's
 * work per request, split between nginx and Node). Plain requests (`GET /info`, answered from memory by the agent server) at 50
 * keep-alive connections, every way in turn for three rounds (medians); streamed runs
 * (`POST /runs/stream`) one at a time, every way interleaved, timed to the first byte of the
 * stream; and full TLS handshakes a second (new connection each, no resumption) at the three
 * TLS endpoints, in rounds as well.
 */
export async function servingScenario(stack: BenchStack, agent: DeployedApp, o: BenchOptions): Promise<BenchRow[]> {
  const authPort = await freePort();
  const authServer = await startProcess(
    ['--import', 'tsx', path.join(ROOT, 'bench/support/auth-request-server.ts')],
    {
      NODE_ENV: 'production',
      PORT: String(authPort),
      DATABASE_URL: databaseUrl(stack.dbName),
      REDIS_URL: REDIS,
      SLIPWAY_QUEUE_PREFIX: stack.prefix,
      DEPLOYMENT_ID: agent.deploymentId,
    },
    authPort,
  );
  const stops: Array<() => unknown> = [() => authServer.stop()];
  try {
    const nginx = await startNginx(agent.instanceUrl);
    stops.push(nginx.stop);
    const nginxAuth = await startNginx(agent.instanceUrl, { authUrl: authServer.url });
    stops.push(nginxAuth.stop);
    const nginxTls = await startNginx(agent.instanceUrl, { tls: stack.certificate });
    stops.push(nginxTls.stop);
    // The edge's per-request work done by nginx and Node: TLS in nginx, the key check in Node.
    const nginxTlsAuth = await startNginx(agent.instanceUrl, { tls: stack.certificate, authUrl: authServer.url });
    stops.push(nginxTlsAuth.stop);
    const caddy = await startCaddy(agent.instanceUrl, stack.certificate);
    stops.push(caddy.stop);
    if (!agent.url.startsWith('https:'))
      throw new Error(
        `the deployment's url ${agent.url} is not the edge's https (bench/support/stack.ts starts it with a certificate)`,
      );
    const edge = edgeTarget(agent.url);

    const key = stack.key;
    // The gates really check the key: without one, a 401 (and the key check is what is measured).
    const serving: Target = { url: agent.servingUrl };
    for (const gated of [serving, nginxAuth.target, nginxTlsAuth.target, edge]) {
      const status = await statusOf(gated, '/info');
      if (status !== 401) throw new Error(`${gated.host ?? gated.url}/info without a key answered ${status}, not 401`);
    }
    // Each TLS endpoint serves the stack's certificate for the name asked, over the same TLS version.
    const protocols = new Set<string>();
    for (const t of [nginxTls.target, nginxTlsAuth.target, caddy.target, edge])
      protocols.add(await checkedHandshake(endpointOf(t), stack.certificate.cert));
    if (protocols.size !== 1)
      throw new Error(`the TLS endpoints agreed different versions: ${[...protocols].join(', ')}`);

    const ways = {
      direct: { url: agent.instanceUrl },
      nginx: nginx.target,
      serving,
      nginxAuth: nginxAuth.target,
      nginxTls: nginxTls.target,
      nginxTlsAuth: nginxTlsAuth.target,
      caddy: caddy.target,
      edge,
    } satisfies Record<string, Target>;
    const names = Object.keys(ways) as Array<keyof typeof ways>;
    const rounds = roundsOf(o);
    const m = await loadInRounds(ways, '/info', { 'x-api-key': key }, o);
    const { direct, nginx: viaNginx, serving: viaUrl, nginxAuth: viaNginxAuth } = m;

    const samples = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<keyof typeof ways, number[]>;
    const timed = (name: keyof typeof ways) =>
      firstByte(ways[name], key).catch((err: Error) => Promise.reject(new Error(`${name}: ${err.message}`)));
    for (const name of names) for (let i = 0; i < 3; i++) await timed(name);
    for (let i = 0; i < o.streamRuns; i++) for (const name of names) samples[name].push(await timed(name));
    const sse = Object.fromEntries(names.map((n) => [n, percentile(samples[n], 50)])) as Record<
      keyof typeof ways,
      number
    >;

    // Full TLS handshakes, the three TLS endpoints in turn, in rounds (medians).
    const tlsWays = ['nginxTls', 'caddy', 'edge'] as const;
    const handshakes: Record<(typeof tlsWays)[number], number[]> = { nginxTls: [], caddy: [], edge: [] };
    for (let r = 0; r < rounds; r++) {
      for (const name of tlsWays) {
        const res = await handshakesPerSecond(endpointOf(ways[name]), HANDSHAKE_CLIENTS, o.durationSec);
        if (res.failed)
          throw new Error(`TLS handshakes with ${name}: ${res.failed} failed:\n  ${res.failures.join('\n  ')}`);
        handshakes[name].push(res.perSec);
      }
    }
    const hs = Object.fromEntries(tlsWays.map((n) => [n, percentile(handshakes[n], 50)])) as Record<
      (typeof tlsWays)[number],
      number
    >;

    const HTTPS = 'serving: HTTPS GET /info';
    const HTTPS_SSE = 'serving: HTTPS SSE first byte';
    const TLS = 'serving: TLS handshakes';

    return [
      ...servingUrlRows('serving: GET /info', m),
      untargeted(atMost('serving: GET /info', 'p99, nginx vs direct', viaNginx.p99, direct.p99, Infinity)),
      untargeted(atMost('serving: SSE first byte', 'p50, nginx vs direct', sse.nginx, sse.direct, Infinity)),
      {
        ...atMost('serving: SSE first byte', 'p50, serving URL vs direct', sse.serving, sse.direct, Infinity),
        target: `≤ baseline + ${SSE_MARGIN_MS} ms`,
        met: sse.serving <= sse.direct + SSE_MARGIN_MS,
      },
      // The alternative to the Node proxy, measured beside it (no target: it informs the choice).
      untargeted(
        atLeast(
          'serving: GET /info',
          'nginx + auth_request req/s vs direct',
          viaNginxAuth.reqPerSec,
          direct.reqPerSec,
          0,
        ),
      ),
      untargeted(
        atLeast(
          'serving: GET /info',
          'serving URL req/s vs nginx + auth_request',
          viaUrl.reqPerSec,
          viaNginxAuth.reqPerSec,
          0,
        ),
      ),
      untargeted(
        atMost(
          'serving: GET /info',
          'p99, serving URL vs nginx + auth_request',
          viaUrl.p99,
          viaNginxAuth.p99,
          Infinity,
        ),
      ),
      untargeted(
        atMost('serving: SSE first byte', 'p50, nginx + auth_request vs direct', sse.nginxAuth, sse.direct, Infinity),
      ),
      // Over HTTPS: the deployment's url at the edge (TLS, the edge, the serving proxy with its key
      // check, the instance) against nginx and Caddy terminating TLS straight to the instance.
      ...edgeRows(HTTPS, m),
      untargeted(atLeast(HTTPS, 'edge req/s vs serving URL', m.edge.reqPerSec, viaUrl.reqPerSec, 0)),
      // A peer doing the edge's work per request (TLS, a key check in a Node process, the forward):
      // what any design keeping one Node implementation of the serving rules is bound by.
      untargeted(
        atLeast(HTTPS, 'nginx (TLS) + auth_request req/s vs direct', m.nginxTlsAuth.reqPerSec, direct.reqPerSec, 0),
      ),
      untargeted(
        atLeast(HTTPS, 'edge req/s vs nginx (TLS) + auth_request', m.edge.reqPerSec, m.nginxTlsAuth.reqPerSec, 0),
      ),
      untargeted(atMost(HTTPS_SSE, 'p50, nginx (TLS) vs direct', sse.nginxTls, sse.direct, Infinity)),
      untargeted(atMost(HTTPS_SSE, 'p50, Caddy (TLS) vs direct', sse.caddy, sse.direct, Infinity)),
      untargeted(atMost(HTTPS_SSE, 'p50, edge vs direct', sse.edge, sse.direct, Infinity)),
      untargeted(atLeast(TLS, 'Caddy vs nginx', hs.caddy, hs.nginxTls, 0, 'handshakes/s')),
      atLeast(TLS, 'edge vs nginx', hs.edge, hs.nginxTls, HANDSHAKE_SHARE, 'handshakes/s'),
    ];
  } finally {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => {});
    closeKeptConnections();
  }
}
