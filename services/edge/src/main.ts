/**
 * The edge process (docs/operations.md, The edge): the one entry point of every cloud-hosted
 * deployment, at `<name>.<SLIPWAY_APPS_DOMAIN>` on SLIPWAY_EDGE_HTTP_PORT. It keeps its routing
 * table from Postgres (no restart on a change) and forwards to each deployment's serving proxy,
 * so it scales on its own: run as many as the load needs. Entry file: `tsx services/edge/src/main.ts`.
 */
import { loadConfigOrExit, platformCredentials } from '@slipway/config';
import { edgeToken } from '@slipway/crypto';
import { createDataSource, EDGE_ROUTES_CHANNEL, initializeWhenReachable, PgNotifications } from '@slipway/db';
import { createLogger, installProcessGuards, installShutdown } from '@slipway/logging';
import { CertificateFiles } from './certificate-files.js';
import { EdgeServer } from './edge-server.js';
import { FULL_READ_MS, RouteTable } from './route-table.js';

const WILDCARDS: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' };

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger({ name: 'edge', level: config.logLevel, secrets: platformCredentials(config) });
  installProcessGuards(log);
  if (config.edge.httpPort === null) {
    log.info('SLIPWAY_EDGE_HTTP_PORT=off: no edge to run');
    return;
  }
  const dataSource = createDataSource({ url: config.databaseUrl, applicationName: 'slipway-edge', poolSize: 4 });
  await initializeWhenReachable(dataSource, log);
  const routes = new RouteTable(dataSource, config.edge.upstreamHost ?? WILDCARDS[config.runtime.host] ?? config.runtime.host, log);
  const notifications = new PgNotifications(config.databaseUrl, [EDGE_ROUTES_CHANNEL], log);
  const readAll = () => routes.readAll().catch((err) => log.warn({ err }, 'edge: reading the routes failed (kept the ones it had)'));
  notifications.subscribe(EDGE_ROUTES_CHANNEL, (deploymentId) => {
    routes.readOne(deploymentId).catch((err) => log.warn({ err, deploymentId }, 'edge: reading a route failed (kept the one it had)'));
  });
  // Changes made while the connection was down were not heard: read everything again.
  notifications.onConnectionChange((connected) => connected && void readAll());
  await routes.readAll();
  const timer = setInterval(() => void readAll(), FULL_READ_MS);
  timer.unref();

  const common = { host: config.edge.host, appsDomain: config.edge.appsDomain, routes, token: edgeToken(config.secretsKey.key), log };
  const certificate = config.edge.httpsPort !== null && config.edge.tlsCertFile && config.edge.tlsKeyFile ? new CertificateFiles(config.edge.tlsCertFile, config.edge.tlsKeyFile) : null;
  const https = certificate ? new EdgeServer({ ...common, port: config.edge.httpsPort!, tls: certificate.read() }) : null;
  const http = new EdgeServer({ ...common, port: config.edge.httpPort, redirectToHttpsPort: https ? (config.edge.publicPort ?? config.edge.httpsPort!) : undefined });
  await http.listen();
  await https?.listen();
  // A renewed certificate file (certbot, an operator) is taken for new connections within a minute.
  const renewals = certificate && https ? certificate.watch((tls) => https.setCertificate(tls), log) : null;
  log.info({ host: config.edge.host, port: http.port, httpsPort: https?.port ?? null, appsDomain: config.edge.appsDomain, routes: routes.size }, 'edge listening');

  installShutdown(
    log,
    [
      {
        name: 'edge',
        run: () => {
          if (renewals) clearInterval(renewals);
          return Promise.all([http.close(), https?.close()]);
        },
      },
      { name: 'notifications', run: () => notifications.close() },
      {
        name: 'postgres',
        run: () => {
          clearInterval(timer);
          routes.close();
          return dataSource.destroy();
        },
      },
    ],
    config.shutdownTimeoutMs,
  );
}

main().catch((err) => {
  process.stderr.write(`edge failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
