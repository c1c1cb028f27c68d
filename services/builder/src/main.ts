/**
 * The builder process: a BullMQ worker on `builds`, plus the roles every worker process hosts
 * (listed below). Entry file: `tsx services/builder/src/main.ts`; run more copies to build more
 * in parallel.
 */
import { DeploymentRepository } from '@slipway/db';
import { createJobConsumer, QUEUES } from '@slipway/jobs';
import { sandboxForStart, type Sandbox } from '@slipway/runtime';
import {
  healthPortRole,
  maintenanceRole,
  outboxRelayRole,
  previewFeedbackRole,
  runWorkerProcess,
  webhookDeliveryRole,
} from '@slipway/worker';
import { buildRevisionProcessor } from './build-revision.processor.js';
import { integrationCloneAccess } from './clone-auth.js';
import { AgentServerHostInstall } from './host-install.js';
import { liveBuilds, sweepBuildDirectories } from './sweep-builds.js';

// Set up before the workers take jobs; null: steps run unsandboxed (the documented opt-out).
let sandbox: Sandbox | null = null;

runWorkerProcess({
  name: 'builder',
  // Hosted beside its own `builds` worker (below), as by every worker process.
  roles: [maintenanceRole, webhookDeliveryRole, outboxRelayRole, previewFeedbackRole, healthPortRole],
  onStart: async ({ config, dataSource, log }) => {
    // Production refuses to start without the sandbox unless SLIPWAY_SANDBOX=off, which warns
    // at every start (docs/operations.md, Sandbox), exactly as the deployer does.
    sandbox = await sandboxForStart(config.sandbox, dataSource, new DeploymentRepository(dataSource.manager), {
      production: config.nodeEnv === 'production',
      warn: (m) => log.warn(m),
      stores: [config.databaseUrl, config.redisUrl],
    });
    // Directories of builds whose builder died (this one, before a restart, or another).
    const removed = await sweepBuildDirectories(config.dataDir, dataSource);
    // …and their cgroups (`b-<revision>-a<attempt>`, empty once the steps died with that builder).
    for (const name of removed) await sandbox?.cgroups.handle(`b-${name}`).remove();
    if (removed.length) log.info({ removed }, 'removed build directories left by interrupted builds');
    // …and their network namespaces (every `b-…` holder whose build is not running).
    const reaped = await sandbox?.network.reap('b-', async (owner) =>
      (await liveBuilds(dataSource, [owner.slice(2)])).has(owner.slice(2)),
    );
    if (reaped?.length) log.info({ reaped }, 'removed network namespaces left by interrupted builds');
    const network = sandbox?.network;
    return network ? { name: 'sandbox network', stop: () => network.close() } : undefined;
  },
  workers: ({ config, dataSource, flow, workerRedis, log, secrets }) => {
    return [
      createJobConsumer({
        queue: QUEUES.builds,
        handlers: {
          'build.revision': buildRevisionProcessor({
            config,
            dataSource,
            flow,
            secrets,
            cloneAccess: integrationCloneAccess(config, dataSource, secrets),
            sandbox,
            hostInstall: new AgentServerHostInstall({
              root: config.agentServerHostCache,
              deadlineMs: config.pipeline.buildDeadlineMs,
            }),
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
