/**
 * The builder process: a BullMQ worker on `builds` (plus the shared maintenance worker).
 * Entry file: `tsx services/builder/src/main.ts`; run more copies to build more in parallel.
 */
import { createWorker, QUEUES, runWorkerProcess } from '@slipway/jobs';
import { buildRevisionProcessor } from './build-revision.processor.js';

runWorkerProcess({
  name: 'builder',
  workers: ({ config, dataSource, flow, workerRedis, log }) => [
    createWorker({
      queue: QUEUES.builds,
      handlers: { 'build.revision': buildRevisionProcessor(dataSource, flow) },
      connection: workerRedis,
      prefix: config.queuePrefix,
      concurrency: config.builderConcurrency,
      log,
    }),
  ],
}).catch((err) => {
  process.stderr.write(`builder failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
