/**
 * The edge process (docs/operations.md, The edge): the one entry point of every cloud-hosted
 * deployment, at `<name>.<SLIPWAY_APPS_DOMAIN>` on SLIPWAY_EDGE_HTTP_PORT. It keeps its routing
 * table from Postgres (no restart on a change) and forwards to each deployment's serving proxy,
 * so it scales on its own: run as many as the load needs. Entry file: `tsx services/edge/src/main.ts`.
 */
import { loadConfigOrExit, platformCredentials } from '@slipway/config';
import { edgeToken } from '@slipway/crypto';
import {
  createDataSource,
  EDGE_ROUTES_CHANNEL,
  initializeWhenReachable,
  PgNotifications,
  stateOnceVerified,
} from '@slipway/db';
import { createLogger, installProcessGuards, installShutdown, startHealthPort } from '@slipway/logging';
import { answerAcmeChallenge } from './acme/challenge-responder.js';
import { automaticCertificates } from './acme/automatic-certificates.js';
import { CertificateFiles } from './certificate-files.js';
import { DomainVerifier } from './domain-verifier.js';
import { EdgeMetrics } from './edge-metrics.js';
import { EdgeServer } from './edge-server.js';
import { FULL_READ_MS, RouteTable } from './route-table.js';

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
  const routes = new RouteTable(dataSource, config.edge.upstreamHost ?? null, config.runtime.advertiseHost, log);
  // Certificates through ACME, when configured (acme/automatic-certificates.ts).
  const acme =
    config.edge.httpsPort !== null && config.edge.acmeDirectoryUrl
      ? automaticCertificates(config, dataSource, routes, log)
      : null;
  const notifications = new PgNotifications(config.databaseUrl, [EDGE_ROUTES_CHANNEL], log);
  const readAll = () =>
    routes.readAll().catch((err) => log.warn({ err }, 'edge: reading the routes failed (kept the ones it had)'));
  notifications.subscribe(EDGE_ROUTES_CHANNEL, (deploymentId) => {
    if (deploymentId === 'owner')
      return void routes
        .readOwner()
        .catch((err) => log.warn({ err }, 'edge: reading the runtime owner failed (kept the one it had)'));
    routes.readOne(deploymentId).then(
      // A host verified or added, a certificate to renew: the keeper looks at once.
      () => void acme?.keeper.poke(),
      (err) => log.warn({ err, deploymentId }, 'edge: reading a route failed (kept the one it had)'),
    );
  });
  // Changes made while the connection was down were not heard: read everything again.
  notifications.onConnectionChange((connected) => connected && void readAll());
  await routes.readAll();
  const timer = setInterval(() => void readAll(), FULL_READ_MS);
  timer.unref();
  const metrics = new EdgeMetrics(() => routes.size, acme ? () => acme.repo.summaries() : undefined);
  // Ready while Postgres answers: routes, certificates and challenges are all read from it.
  const health =
    config.edge.healthPort === null
      ? null
      : startHealthPort({
          port: config.edge.healthPort,
          host: config.edge.host,
          ready: () =>
            dataSource.query('SELECT 1').then(
              () => true,
              () => false,
            ),
          registry: metrics.registry,
          log,
        });

  if (config.domains.verification === 'off') {
    log.warn(
      'SLIPWAY_DOMAIN_VERIFICATION=off: a custom domain is routed as soon as a workspace claims it, ' +
        'without proof that the workspace controls it',
    );
  }
  const verifier = new DomainVerifier({
    dataSource,
    dnsServers: config.domains.dnsServers,
    everyMs: config.domains.verifyEveryMs,
    verifiedState: stateOnceVerified(!!config.edge.acmeDirectoryUrl),
    log,
  });
  verifier.start();

  const common = {
    host: config.edge.host,
    appsDomain: config.edge.appsDomain,
    routes,
    token: edgeToken(config.secretsKey.key),
    trustProxy: config.edge.trustProxy,
    log,
  };
  const operator =
    config.edge.httpsPort !== null && config.edge.tlsCertFile && config.edge.tlsKeyFile
      ? new CertificateFiles(config.edge.tlsCertFile, config.edge.tlsKeyFile)
      : null;
  const suffix = `.${config.edge.appsDomain}`;
  // The operator's certificate covers the apps domain's names; ACME's, each host it was issued for.
  // Postgres away: the plain answer rather than a 502 (the certificate cannot be read to serve HTTPS either).
  const hasCertificate = async (host: string) =>
    (!!operator && host.endsWith(suffix)) ||
    (!!acme && (await acme.keeper.secureContextFor(host).catch(() => null)) !== null);
  // The names the edge routes now: a TLS name outside them is no reason to read Postgres.
  const served = (name: string) => routes.destinationOf(name, suffix) !== undefined;
  const https =
    operator || acme
      ? new EdgeServer({
          ...common,
          port: config.edge.httpsPort!,
          count: metrics.listener('https'),
          tls: { ...operator?.read(), ...(acme ? { SNICallback: acme.keeper.sniCallback(served) } : {}) },
        })
      : null;
  const http = new EdgeServer({
    ...common,
    port: config.edge.httpPort,
    count: metrics.listener('http'),
    redirectToHttpsPort: https ? (config.edge.publicPort ?? config.edge.httpsPort!) : undefined,
    hasCertificate,
    answerChallenge: acme ? (req, res) => answerAcmeChallenge(req, res, acme.repo) : undefined,
  });
  await http.listen();
  await https?.listen();
  acme?.keeper.start();
  // A renewed certificate file (certbot, an operator) is taken for new connections within a minute.
  const renewals = operator && https ? operator.watch((tls) => https.setCertificate(tls), log) : null;
  log.info(
    {
      host: config.edge.host,
      port: http.port,
      httpsPort: https?.port ?? null,
      acme: !!acme,
      appsDomain: config.edge.appsDomain,
      routes: routes.size,
    },
    'edge listening',
  );

  installShutdown(
    log,
    [
      {
        name: 'edge',
        run: () => {
          if (renewals) clearInterval(renewals);
          return Promise.all([
            http.close(),
            https?.close(),
            verifier.stop(),
            acme?.keeper.stop(),
            health && new Promise((resolve) => health.close(resolve)),
          ]);
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
