import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';

export interface HealthPortOptions {
  port: number;
  host?: string;
  /** Whether the process can do its work (`/readyz`): never throws; what is down goes to the log. */
  ready: () => Promise<boolean>;
  /** Served at `/metrics`. */
  registry: Registry;
  log: Logger;
}

/**
 * A process's `/healthz` (up), `/readyz` (able to work) and `/metrics` for orchestrators and
 * Prometheus, on a port of its own: never rate limited, never routed with user traffic, and only
 * ok / not ok in the answer (what is down goes to the log, once per change).
 */
export function startHealthPort({ port, host, ready, registry, log }: HealthPortOptions): Server {
  let wasReady = true;
  const server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res
          .writeHead(405, { 'content-type': 'application/json', allow: 'GET, HEAD' })
          .end('{"detail":"Method Not Allowed"}');
      } else if (path === '/metrics') {
        res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
      } else if (path === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      } else if (path === '/readyz') {
        const ok = await ready().catch(() => false);
        if (ok !== wasReady) log[ok ? 'info' : 'warn'](ok ? 'health port: ready again' : 'health port: not ready');
        wasReady = ok;
        res
          .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
          .end(ok ? '{"status":"ok"}' : '{"status":"unavailable"}');
      } else {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      }
    } catch (err) {
      log.warn({ err }, 'health port: a request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"status":"error"}');
    }
  });
  server.listen(port, host, () => log.info({ port }, 'health port listening'));
  return server;
}
