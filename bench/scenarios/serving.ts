import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { assertNoFailures, load, percentile, type LoadResult } from '../support/measure.js';
import { freePort, startProcess } from '../support/processes.js';
import { atLeast, atMost, type BenchRow } from '../support/report.js';
import { databaseUrl, REDIS, ROOT, type BenchStack } from '../support/stack.js';
import type { DeployedAgent } from './deploy.js';
import type { BenchOptions } from './options.js';

/** How much later than the instance's own the first byte of a stream may come through the serving URL. */
const SSE_MARGIN_MS = 5;

/**
 * Debian's nginx as a plain reverse proxy in front of the same instance: one worker process
 * (the deployer's proxy is one process too), keep-alive connections to the instance, no
 * buffering of responses (what a stream needs), no access log (the deployer's proxy writes none).
 * With `authUrl`, every request first makes an `auth_request` subrequest (keep-alive, no body,
 * the original method and URI in headers) to that key check, and the key is removed before the
 * instance sees it: what a deployer-driven nginx in place of the Node proxy would have to do.
 */
async function startNginx(upstream: string, authUrl?: string): Promise<{ url: string; stop: () => void }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-nginx-'));
  const port = await freePort();
  const { host } = new URL(upstream);
  const auth = authUrl
    ? {
        upstream: `upstream auth { server ${new URL(authUrl).host}; keepalive 64; }`,
        check: `auth_request /_auth;
      proxy_set_header X-Api-Key "";`,
        location: `location = /_auth {
      internal;
      proxy_pass http://auth;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
    }`,
      }
    : { upstream: '', check: '', location: '' };
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream instance { server ${host}; keepalive 64; }
  ${auth.upstream}
  server {
    listen 127.0.0.1:${port};
    location / {
      ${auth.check}
      proxy_pass http://instance;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
    ${auth.location}
  }
}
`,
  );
  const child: ChildProcess = spawn('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 10_000; ; ) {
    if ((await fetch(`${url}/ok`).catch(() => null))?.ok) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`nginx did not start (exit ${child.exitCode}); is it installed (apt-get install nginx)?`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Milliseconds from sending a streamed run until the first byte of its SSE body. */
function firstByte(base: string, key: string): Promise<number> {
  const body = JSON.stringify({ assistant_id: 'agent', input: { steps: [] }, stream_mode: ['values'] });
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(`${base}/runs/stream`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key, 'content-length': Buffer.byteLength(body) } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`${base}/runs/stream answered ${res.statusCode}`));
      res.once('data', () => resolve(performance.now() - started));
      res.resume();
    });
    req.once('error', reject);
    req.end(body);
  });
}

/**
 * The serving path: requests to a deployed agent through its serving URL (the deployer's proxy,
 * key check included) against the same instance straight, behind Debian's nginx, and behind
 * nginx with the key check as an `auth_request` to a Node process running the deployer's
 * ServingAuth (the alternative to the Node proxy, bench/README.md). Plain requests (`GET /info`,
 * answered from memory by the agent server) at 50 connections, the four ways in turn for three
 * rounds (medians); streamed runs (`POST /runs/stream`) one at a time, the four ways
 * interleaved, timed to the first byte of the stream.
 */
export async function servingScenario(stack: BenchStack, agent: DeployedAgent, o: BenchOptions): Promise<BenchRow[]> {
  const authPort = await freePort();
  const authServer = await startProcess(
    ['--import', 'tsx', path.join(ROOT, 'bench/support/auth-request-server.ts')],
    { NODE_ENV: 'production', PORT: String(authPort), DATABASE_URL: databaseUrl(stack.dbName), REDIS_URL: REDIS, SLIPWAY_QUEUE_PREFIX: stack.prefix, DEPLOYMENT_ID: agent.deploymentId },
    authPort,
  );
  const nginx = await startNginx(agent.instanceUrl);
  const nginxAuth = await startNginx(agent.instanceUrl, authServer.url);
  try {
    const key = stack.key;
    // Both gates really check the key: without one, a 401 (and the key check is what is measured).
    for (const gated of [agent.url, nginxAuth.url]) {
      const res = await fetch(`${gated}/info`);
      await res.arrayBuffer();
      if (res.status !== 401) throw new Error(`${gated}/info without a key answered ${res.status}, not 401`);
    }
    const bases = [agent.instanceUrl, nginx.url, agent.url, nginxAuth.url];
    // In rounds (direct, nginx, serving URL, nginx + auth_request, again…), the median of each: a
    // busy spell on a shared machine then lands on all of them instead of on whichever ran during it.
    const rounds = o.durationSec >= 10 ? 3 : 1;
    const loads: LoadResult[][] = bases.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (const [k, base] of bases.entries()) {
        const res = await load({ url: `${base}/info`, headers: { 'x-api-key': key }, connections: 50, durationSec: o.durationSec, warmupSec: r === 0 ? o.warmupSec : 0 });
        assertNoFailures({ [`${base}/info`]: res });
        loads[k]!.push(res);
      }
    }
    type Measured = Pick<LoadResult, 'reqPerSec' | 'p99'>;
    const [direct, viaNginx, viaUrl, viaNginxAuth] = loads.map((l) => ({ reqPerSec: percentile(l.map((x) => x.reqPerSec), 50), p99: percentile(l.map((x) => x.p99), 50) })) as [
      Measured,
      Measured,
      Measured,
      Measured,
    ];
    const nginxShare = viaNginx.reqPerSec / direct.reqPerSec;

    const samples: number[][] = bases.map(() => []);
    for (const base of bases) for (let i = 0; i < 3; i++) await firstByte(base, key);
    for (let i = 0; i < o.streamRuns; i++) for (const [k, base] of bases.entries()) samples[k]!.push(await firstByte(base, key));
    const [sDirect, sNginx, sUrl, sNginxAuth] = samples.map((s) => percentile(s, 50)) as [number, number, number, number];
    const untargeted = (row: BenchRow): BenchRow => ({ ...row, target: undefined, met: undefined });

    return [
      { ...atLeast('serving: GET /info', 'nginx req/s vs direct', viaNginx.reqPerSec, direct.reqPerSec, 0), target: undefined, met: undefined },
      { ...atLeast('serving: GET /info', 'serving URL req/s vs direct', viaUrl.reqPerSec, direct.reqPerSec, Number(nginxShare.toFixed(2))), target: `≥ nginx's ${nginxShare.toFixed(2)}` },
      atMost('serving: GET /info', 'p99, serving URL vs nginx', viaUrl.p99, viaNginx.p99, 1),
      { ...atMost('serving: GET /info', 'p99, nginx vs direct', viaNginx.p99, direct.p99, Infinity), target: undefined, met: undefined },
      { ...atMost('serving: SSE first byte', 'p50, nginx vs direct', sNginx, sDirect, Infinity), target: undefined, met: undefined },
      { ...atMost('serving: SSE first byte', 'p50, serving URL vs direct', sUrl, sDirect, Infinity), target: `≤ baseline + ${SSE_MARGIN_MS} ms`, met: sUrl <= sDirect + SSE_MARGIN_MS },
      // The alternative to the Node proxy, measured beside it (no target: it informs the choice).
      untargeted(atLeast('serving: GET /info', 'nginx + auth_request req/s vs direct', viaNginxAuth.reqPerSec, direct.reqPerSec, 0)),
      untargeted(atLeast('serving: GET /info', 'serving URL req/s vs nginx + auth_request', viaUrl.reqPerSec, viaNginxAuth.reqPerSec, 0)),
      untargeted(atMost('serving: GET /info', 'p99, serving URL vs nginx + auth_request', viaUrl.p99, viaNginxAuth.p99, Infinity)),
      untargeted(atMost('serving: SSE first byte', 'p50, nginx + auth_request vs direct', sNginxAuth, sDirect, Infinity)),
    ];
  } finally {
    nginx.stop();
    nginxAuth.stop();
    await authServer.stop();
  }
}
