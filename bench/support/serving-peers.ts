import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './processes.js';
import { APPS_DOMAIN, type BenchCertificate } from './stack.js';

// The serving scenario's peers (Debian's nginx and Caddy in front of the same instance as the
// serving URL and the edge) and how the scenario reaches each way it measures (a Target).

/**
 * How long the peers keep an idle connection to a Node upstream: under Node's 5 s server
 * keep-alive, as the serving proxy does (UpstreamPool). nginx's default of 60 s let it write a
 * streamed run onto a connection the instance was closing, and answer 502 (seen in CI).
 */
const UPSTREAM_IDLE = '4s';

/**
 * Where requests of one way go: `url` is where to connect (an address), `host` the Host sent and,
 * over https, also the TLS server name (SNI). The https ones all serve the stack's self-signed
 * certificate for `*.bench.test`; the load generators do not check it (autocannon cannot), it is
 * checked once per endpoint before the loads.
 */
export interface Target {
  url: string;
  host?: string;
}

export const servernameOf = (t: Target) => (t.host ? t.host.replace(/:\d+$/, '') : undefined);
/** A name under the apps domain for a peer (nothing resolves it: it is the Host and SNI sent to 127.0.0.1). */
const peerTarget = (url: string, label: string): Target => ({
  url,
  host: `${label}.${APPS_DOMAIN}:${new URL(url).port}`,
});

/** Keep-alive connections for the https ways' streams, as the global agent keeps them for http (the certificate is checked apart). */
const httpsAgent = new HttpsAgent({ keepAlive: true, rejectUnauthorized: false });

/** Closes the https ways' kept connections (at the end of a scenario: none may keep the bench running). */
export function closeKeptConnections(): void {
  httpsAgent.destroy();
}

/** One request to `target`; resolves with its response (the body is for the caller to read or drop). */
export function send(
  target: Target,
  method: string,
  urlPath: string,
  headers: Record<string, string | number>,
  body?: string,
): Promise<IncomingMessage> {
  const https = target.url.startsWith('https:');
  const options = {
    method,
    headers: { ...(target.host ? { host: target.host } : {}), ...headers },
    ...(https ? { agent: httpsAgent, servername: servernameOf(target) } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(`${target.url}${urlPath}`, options, resolve);
    req.once('error', reject);
    req.end(body);
  });
}

/** The status of `GET <path>` (body dropped), or null while nothing answers. */
export async function statusOf(
  target: Target,
  urlPath: string,
  headers: Record<string, string> = {},
): Promise<number | null> {
  try {
    const res = await send(target, 'GET', urlPath, headers);
    res.resume();
    return res.statusCode ?? null;
  } catch {
    return null;
  }
}

/** Waits until `GET /ok` through a proxy just started answers 200 (from the instance behind it). */
async function waitUntilUp(
  name: string,
  target: Target,
  child: ChildProcess,
  output: () => string = () => '',
): Promise<void> {
  for (const deadline = Date.now() + 10_000; ; ) {
    if ((await statusOf(target, '/ok')) === 200) return;
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`${name} did not start (exit ${child.exitCode}):\n${output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Debian's nginx as a plain reverse proxy in front of the same instance: one worker process
 * (the deployer's proxy is one process too), keep-alive connections to the instance, no
 * buffering of responses (what a stream needs), no access log (the deployer's proxy writes none).
 * With `authUrl`, every request first makes an `auth_request` subrequest (keep-alive, no body,
 * the original method and URI in headers) to that key check, and the key is removed before the
 * instance sees it: what a deployer-driven nginx in place of the Node proxy would have to do.
 */
export async function startNginx(
  upstream: string,
  options: { authUrl?: string; tls?: BenchCertificate } = {},
): Promise<{ target: Target; stop: () => void }> {
  const { authUrl, tls } = options;
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-nginx-'));
  const port = await freePort();
  const { host } = new URL(upstream);
  const auth = authUrl
    ? {
        upstream: `upstream auth { server ${new URL(authUrl).host}; keepalive 64; keepalive_timeout ${UPSTREAM_IDLE}; }`,
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
  upstream instance { server ${host}; keepalive 64; keepalive_timeout ${UPSTREAM_IDLE}; }
  ${auth.upstream}
  # nginx closes a client's connection after 1,000 requests by default, and a load client that
  # already sent the next one reads a reset (a fast machine reached 1,000 per connection in a
  # 10 s load). The serving proxy, the edge and Caddy set no such limit.
  keepalive_requests 1000000;
  server {
    ${
      tls
        ? // TLS 1.3 as the edge and Caddy speak it (Debian's nginx 1.22 enables up to 1.2 unless told).
          `listen 127.0.0.1:${port} ssl;
    ssl_certificate ${tls.certFile};
    ssl_certificate_key ${tls.keyFile};
    ssl_protocols TLSv1.2 TLSv1.3;`
        : `listen 127.0.0.1:${port};`
    }
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
  const target = tls ? peerTarget(`https://127.0.0.1:${port}`, 'nginx') : { url: `http://127.0.0.1:${port}` };
  await waitUntilUp('nginx (is it installed? apt-get install nginx)', target, child);
  return {
    target,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Debian's Caddy terminating TLS in front of the same instance: `reverse_proxy` with keep-alive
 * connections to it (up to 64 idle, as nginx's), the stack's certificate loaded from its files,
 * no automatic HTTPS (no ACME, no redirects), no admin endpoint, no access log, HTTP/1.1 and 2
 * (no HTTP/3 listener), responses flushed as they come (streams). One process with
 * GOMAXPROCS=1: one core's worth of Go, as nginx has one worker and the edge one event loop.
 */
export async function startCaddy(
  upstream: string,
  tls: BenchCertificate,
): Promise<{ target: Target; stop: () => Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-caddy-'));
  const port = await freePort();
  const config = {
    admin: { disabled: true },
    storage: { module: 'file_system', root: path.join(dir, 'data') },
    logging: { logs: { default: { level: 'ERROR' } } },
    apps: {
      http: {
        servers: {
          bench: {
            listen: [`127.0.0.1:${port}`],
            protocols: ['h1', 'h2'],
            automatic_https: { disable: true },
            tls_connection_policies: [{}],
            routes: [
              {
                handle: [
                  {
                    handler: 'reverse_proxy',
                    upstreams: [{ dial: new URL(upstream).host }],
                    flush_interval: -1,
                    transport: {
                      protocol: 'http',
                      keep_alive: { enabled: true, max_idle_conns_per_host: 64, idle_timeout: UPSTREAM_IDLE },
                    },
                  },
                ],
              },
            ],
          },
        },
      },
      tls: { certificates: { load_files: [{ certificate: tls.certFile, key: tls.keyFile }] } },
    },
  };
  writeFileSync(path.join(dir, 'caddy.json'), JSON.stringify(config, null, 2));
  const output: string[] = [];
  const child: ChildProcess = spawn('caddy', ['run', '--config', path.join(dir, 'caddy.json')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      XDG_DATA_HOME: path.join(dir, 'data'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      GOMAXPROCS: '1',
    },
  });
  const keep = (d: Buffer) => void (output.push(d.toString()), output.length > 50 && output.shift());
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const target = peerTarget(`https://127.0.0.1:${port}`, 'caddy');
  await waitUntilUp('caddy (is it installed? apt-get install caddy)', target, child, () => output.join(''));
  return {
    target,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
