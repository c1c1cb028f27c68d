/**
 * The deployer process: a BullMQ worker on `rollouts` (rollouts, provisioning, teardown), plus
 * the roles every worker process hosts (listed below). Entry file: `tsx services/deployer/src/main.ts`.
 */
import path from 'node:path';
import { ApiKeyCache, RateLimits } from '@slipway/access';
import { DeploymentRepository } from '@slipway/db';
import { createJobConsumer, producerConnection, QUEUES } from '@slipway/jobs';
import { ImageCache, sandboxForStart } from '@slipway/runtime';
import {
  healthPortRole,
  maintenanceRole,
  outboxRelayRole,
  previewFeedbackRole,
  runWorkerProcess,
  webhookDeliveryRole,
} from '@slipway/worker';
import { imageCacheOptions } from './image-sizes.js';
import { EmbeddedPlacement } from './placement/embedded-placement.js';
import { ListenerPlacement } from './placement/listener-placement.js';
import type { Placements } from './placement/placement.js';
import { ProcessDriver } from './process-driver/process-driver.js';
import { provisionDeploymentProcessor } from './provision-deployment.processor.js';
import { DeploymentDataAccess } from './provisioning/deployment-data-access.js';
import { RevisionInputs } from './revision-inputs.js';
import { rolloutRevisionProcessor } from './rollout-revision.processor.js';
import { ServingAuth } from './serving-auth.js';
import { teardownDeploymentProcessor } from './teardown-deployment.processor.js';

// One per deployer process, adopting before the workers take jobs.
let driver: ProcessDriver;
let inputs: RevisionInputs;
let dataAccess: DeploymentDataAccess;

runWorkerProcess({
  name: 'deployer',
  // Hosted beside its own `rollouts` worker (below), as by every worker process.
  roles: [maintenanceRole, webhookDeliveryRole, outboxRelayRole, previewFeedbackRole, healthPortRole],
  onStart: async ({ config, dataSource, log, metrics, secrets }) => {
    // Production refuses to start without the sandbox unless SLIPWAY_SANDBOX=off (docs/operations.md, Sandbox).
    const sandbox = await sandboxForStart(config.sandbox, dataSource, new DeploymentRepository(dataSource.manager), {
      production: config.nodeEnv === 'production',
      warn: (m) => log.warn(m),
      stores: [config.databaseUrl, config.redisUrl],
    });
    // Probes Postgres and Redis for passwordless local access and reports it, at every start;
    // with the sandbox, fronts listen on its network's services address.
    dataAccess = new DeploymentDataAccess(
      config,
      dataSource,
      secrets,
      log.child({ component: 'data-access' }),
      sandbox?.network ?? null,
    );
    await dataAccess.start();
    // Image revisions run as runc containers in the sandbox; their images are unpacked once per digest.
    // Each image's unpacked size is bounded while it is counted, before umoci writes a byte (image-sizes.ts).
    const images = sandbox
      ? new ImageCache(
          path.join(config.dataDir, 'images'),
          imageCacheOptions(config, dataSource, log.child({ component: 'images' })),
        )
      : null;
    inputs = new RevisionInputs(config, dataSource, secrets, dataAccess, images);
    // Serving URLs check keys and budgets as the api does, in the same Redis (docs/api.md, Deployments).
    const servingRedis = producerConnection(config.redisUrl, log);
    const servingAuth = new ServingAuth({
      dataSource,
      keys: new ApiKeyCache(dataSource, config.apiKeyCacheTtlMs, log),
      limits: new RateLimits({
        settings: config.rateLimit,
        redis: servingRedis,
        keyPrefix: config.queuePrefix,
        log,
        registry: metrics.registry,
      }),
    });
    driver = new ProcessDriver(
      config,
      dataSource,
      log.child({ component: 'process-runtime' }),
      (id) => inputs.get(id),
      sandbox,
      servingAuth,
      metrics,
      images,
    );
    await driver.adopt();
    // Adopted instances find their fronts on the recorded ports; only the runtime's owner keeps them.
    dataAccess.keepFronts(() => driver.isOwner);
    return {
      name: 'process runtime',
      stop: async () => {
        await driver.release();
        await dataAccess.close();
        servingRedis.disconnect();
      },
    };
  },
  workers: ({ config, dataSource, flow, workerRedis, log }) => {
    // Where each deployment's revisions run: this machine, or a listener's cluster.
    const placements: Placements = {
      embedded: new EmbeddedPlacement({ config, dataSource, flow, driver, inputs, dataAccess }),
      listener: new ListenerPlacement(dataSource, flow),
    };
    return [
      createJobConsumer({
        queue: QUEUES.rollouts,
        handlers: {
          'rollout.revision': rolloutRevisionProcessor(config, dataSource, flow, placements),
          'provision.deployment': provisionDeploymentProcessor(dataSource, placements, config.databaseUrl),
          'teardown.deployment': teardownDeploymentProcessor(dataSource, placements),
        },
        connection: workerRedis,
        prefix: config.queuePrefix,
        concurrency: config.deployerConcurrency,
        log,
      }),
    ];
  },
}).catch((err) => {
  process.stderr.write(`deployer failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
