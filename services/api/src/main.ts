/**
 * The api process: HTTP API, docs, Bull Board, /metrics and an outbox relay. Entry file:
 * `tsx services/api/src/main.ts`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfigOrExit, platformCredentials, type Config } from '@slipway/config';
import { createDataSource, TenancyRepository, type BootstrapResult } from '@slipway/db';
import { createLogger, installProcessGuards, installShutdown, type Logger } from '@slipway/logging';
import { closeQueues, createQueues, OutboxRelay, producerConnection } from '@slipway/jobs';
import { RevisionFlow } from '@slipway/pipeline';
import { apiNotifications, apiServer, createApp } from './app.js';

export const BOOTSTRAP_KEY_FILE = 'bootstrap-api-key';

/**
 * Shows a generated bootstrap key once. It goes to stdout, not the log stream: logs are shipped
 * and kept, and secrets never go there. Outside production it is also kept in the data dir
 * (mode 0600) so the quick start can use it.
 */
function announceGeneratedKey(config: Readonly<Config>, key: string): void {
  let saved = '';
  if (config.nodeEnv !== 'production') {
    const file = path.join(config.dataDir, BOOTSTRAP_KEY_FILE);
    writeFileSync(file, key + '\n', { mode: 0o600 });
    saved = `\n  (saved to ${file}; delete that file once you have stored the key)`;
  }
  process.stdout.write(
    `\n================ Slipway bootstrap admin API key (shown once) ================\n  ${key}${saved}\n` +
      `==============================================================================\n\n`,
  );
}

function reportBootstrap(log: Logger, result: BootstrapResult): void {
  log.info({ organizationId: result.organizationId, workspaceId: result.workspaceId }, 'tenancy ready');
  if (result.registeredConfiguredKey) log.info('registered SLIPWAY_BOOTSTRAP_API_KEY as an admin key');
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger({ name: 'api', level: config.logLevel, secrets: platformCredentials(config) });
  installProcessGuards(log);
  if (config.secretsKey.origin === 'generated') {
    log.warn(
      { dataDir: config.dataDir },
      'SLIPWAY_SECRETS_KEY is not set: generated one into the data dir. Set it explicitly in production.',
    );
  }

  const dataSource = createDataSource({ url: config.databaseUrl, applicationName: 'slipway-api' });
  await dataSource.initialize();
  if (await dataSource.showMigrations()) {
    log.fatal('the database has pending migrations: run `pnpm migrate` first');
    await dataSource.destroy();
    process.exit(1);
  }
  const bootstrap = await new TenancyRepository(dataSource.manager).bootstrap(config.bootstrapApiKey);
  reportBootstrap(log, bootstrap);
  if (bootstrap.generatedKey) announceGeneratedKey(config, bootstrap.generatedKey);

  const redis = producerConnection(config.redisUrl, log);
  const queues = createQueues(redis, config.queuePrefix, log);
  const flow = new RevisionFlow(config.pipeline);
  const notifications = apiNotifications(config, log);
  const relay = new OutboxRelay(dataSource, queues, log, flow, { notifications });
  relay.start();
  const app = createApp({ config, dataSource, redis, queues, logger: log, notifications });
  const server = apiServer(app, log).listen(config.port, config.host, () => {
    log.info({ url: `http://${config.host}:${config.port}`, publicUrl: config.publicUrl }, 'api listening');
  });
  server.on('error', (err) => {
    log.fatal({ err }, 'could not listen');
    process.exit(1);
  });

  installShutdown(
    log,
    [
      // Open event streams would hold the server open: they end first.
      { name: 'event streams', run: () => app.close() },
      {
        name: 'http',
        run: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
          }),
      },
      { name: 'outbox relay', run: () => relay.stop().then(() => notifications.close()) },
      { name: 'queues', run: () => closeQueues(queues) },
      { name: 'redis', run: () => redis.quit() },
      { name: 'postgres', run: () => dataSource.destroy() },
    ],
    config.shutdownTimeoutMs,
  );
}

main().catch((err) => {
  process.stderr.write(`api failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
