/**
 * The builder process: a BullMQ worker on `builds` (plus the shared maintenance worker).
 * Entry file: `tsx services/builder/src/main.ts`; run more copies to build more in parallel.
 */
import { SecretBox } from '@slipway/crypto';
import { createWorker, QUEUES, runWorkerProcess } from '@slipway/jobs';
import { buildRevisionProcessor } from './build-revision.processor.js';
import { integrationCloneAccess } from './clone-auth.js';
import { sweepBuildDirectories } from './sweep-builds.js';

runWorkerProcess({
  name: 'builder',
  // Directories of builds whose builder died (this one, before a restart, or another).
  onStart: async ({ config, dataSource, log }) => {
    const removed = await sweepBuildDirectories(config.dataDir, dataSource);
    if (removed.length) log.info({ removed }, 'removed build directories left by interrupted builds');
  },
  workers: ({ config, dataSource, flow, workerRedis, log }) => {
    const secrets = new SecretBox(config.secretsKey.key, config.previousSecretsKeys);
    return [
      createWorker({
        queue: QUEUES.builds,
        handlers: {
          'build.revision': buildRevisionProcessor({
            config,
            dataSource,
            flow,
            secrets,
            cloneAccess: integrationCloneAccess(config, dataSource, secrets),
          }),
        },
        connection: workerRedis,
        prefix: config.queuePrefix,
        concurrency: config.builderConcurrency,
        log,
      }),
    ];
  },
}).catch((err) => {
  process.stderr.write(`builder failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
