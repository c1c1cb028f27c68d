/**
 * The deployer process: a BullMQ worker on `rollouts` (rollouts, provisioning, teardown) plus
 * the shared maintenance worker. Entry file: `tsx services/deployer/src/main.ts`.
 */
import { createWorker, QUEUES, runWorkerProcess } from '@slipway/jobs';
import { provisionDeploymentProcessor } from './provision-deployment.processor.js';
import { rolloutRevisionProcessor } from './rollout-revision.processor.js';
import { RuntimeSupervisor } from './runtime-supervisor.js';
import { teardownDeploymentProcessor } from './teardown-deployment.processor.js';

// One per deployer process, started before the workers take jobs.
let supervisor: RuntimeSupervisor;

runWorkerProcess({
  name: 'deployer',
  onStart: async ({ config, dataSource, log }) => {
    supervisor = new RuntimeSupervisor(config, dataSource, log.child({ component: 'process-runtime' }));
    await supervisor.start();
    return { name: 'process runtime', stop: () => supervisor.stop() };
  },
  workers: ({ config, dataSource, flow, workerRedis, log }) => [
    createWorker({
      queue: QUEUES.rollouts,
      handlers: {
        'rollout.revision': rolloutRevisionProcessor(config, dataSource, flow, supervisor),
        'provision.deployment': provisionDeploymentProcessor(config, dataSource),
        'teardown.deployment': teardownDeploymentProcessor(config, dataSource, supervisor),
      },
      connection: workerRedis,
      prefix: config.queuePrefix,
      concurrency: config.deployerConcurrency,
      log,
    }),
  ],
}).catch((err) => {
  process.stderr.write(`deployer failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
