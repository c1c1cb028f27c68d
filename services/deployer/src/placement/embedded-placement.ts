import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { DeploymentRepository, dropDeploymentDatabase, type DataSource } from '@slipway/db';
import { deploymentDatabaseName, type RevisionStatus } from '@slipway/domain';
import type { JobContext } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { RevisionLogWriter, RevisionReads, type PhaseGuard, type RevisionFlow } from '@slipway/pipeline';
import { ArtifactError, DataAccessError, PortsExhaustedError, type RuntimeDriver } from '@slipway/runtime';
import { parkUntilOwner } from '../park.js';
import type { DeploymentDataAccess } from '../provisioning/deployment-data-access.js';
import type { RevisionInput, RevisionInputs } from '../revision-inputs.js';
import type { Placement } from './placement.js';

export interface EmbeddedPlacementDeps {
  config: Readonly<Config>;
  dataSource: DataSource;
  flow: RevisionFlow;
  /** The one owner of this machine's instances (single node: see ProcessDriver). */
  driver: RuntimeDriver;
  inputs: RevisionInputs;
  dataAccess: DeploymentDataAccess;
}

/**
 * This machine: `repohost`/`upload` revisions as sandboxed processes, `internal_docker` and
 * `external_container` (without a listener) as containers of the embedded container runtime.
 * Instances are the runtime owner's alone: a rollout or teardown reaching another deployer
 * waits for it (`parkUntilOwner`).
 */
export class EmbeddedPlacement implements Placement {
  readonly kind = 'embedded';
  readonly beginsAtOnce = false;

  constructor(private readonly deps: EmbeddedPlacementDeps) {}

  /** A database on the control plane's Postgres with a login role of its own, and a Redis ACL user. */
  async provision(deploymentId: string, database: string, log: Logger): Promise<void> {
    await this.deps.dataAccess.provision(deploymentId, database);
    log.info({ database }, 'deployment database, role and Redis user ready');
  }

  async rollout(revisionId: string, guard: PhaseGuard, { job, log }: JobContext): Promise<void> {
    if (!this.deps.driver.isOwner) {
      log.debug('not the process runtime owner; parking the rollout');
      await parkUntilOwner(job);
    }
    await rolloutOnDriver(this.deps, revisionId, guard, log);
  }

  /**
   * Stops the serving proxy and the instances, closes the data-access fronts and drops the Redis
   * user, drops the database, removes the files, then the row: the deployment is gone (404), its
   * tracing project stays. Every step is idempotent, so a retried teardown is safe.
   */
  async teardown(deployment: { id: string; name: string }, { job, log }: JobContext): Promise<void> {
    const { config, dataSource, driver, dataAccess } = this.deps;
    if (!driver.isOwner) await parkUntilOwner(job);
    // Processes first: they hold connections to the database about to be dropped.
    await driver.stop({ deploymentId: deployment.id });
    await dataAccess.drop(deployment.id);
    await dropDeploymentDatabase(config.databaseUrl, deploymentDatabaseName(deployment.name, deployment.id));
    await removeFiles(config, dataSource, deployment.id);
    await new DeploymentRepository(dataSource.manager).removeDeleted(deployment.id);
    log.info('deployment torn down');
  }
}

/**
 * AWAITING_DEPLOY → DEPLOYING, the driver starts the instances under the phase guard
 * (interruption and deadline reach the health wait) and switches traffic to them, DEPLOYED,
 * then the driver retires the old instances (or, when the transition lost, puts traffic back and
 * stops the new ones). Any failure leaves the old instances serving and records DEPLOY_FAILED
 * with the driver's message (the failed instance's last log lines). A bad artifact or an
 * exhausted port range fails at once; anything else unexpected throws, and the reconciler
 * retries the phase.
 */
async function rolloutOnDriver(
  deps: EmbeddedPlacementDeps,
  revisionId: string,
  guard: PhaseGuard,
  log: Logger,
): Promise<void> {
  const { config, dataSource, flow, driver, inputs } = deps;
  const fail = (from: RevisionStatus, message: string) =>
    dataSource.transaction((m) => flow.fail(m, revisionId, 'rollout', { from: [from], message }));
  let input: RevisionInput;
  try {
    input = await inputs.get(revisionId);
  } catch (err) {
    if (!(err instanceof ArtifactError) && !(err instanceof DataAccessError)) throw err;
    await fail('AWAITING_DEPLOY', err.message);
    return;
  }
  // An image's agent server, recorded before it can serve: the serving gate reads it once the
  // revision is active, the API shows it (`agent_server`).
  const set =
    input.agentServer === undefined
      ? undefined
      : {
          revisionConfig: {
            agent_server: !!input.agentServer,
            agent_server_auth_path: input.agentServer?.auth_path ?? null,
          },
        };
  const deploying = await dataSource.transaction((m) =>
    flow.begin(m, revisionId, 'rollout', {
      message: 'Starting instances; waiting for GET /ok.',
      ...(set ? { set } : {}),
    }),
  );
  if (!deploying) return;
  const deployLog = new RevisionLogWriter(dataSource, revisionId, 'deploy', input.secretValues);
  try {
    for (const note of input.notes ?? []) deployLog.line(note.line, note.level);
    const deadline =
      (await new RevisionReads(dataSource.manager).deadlineOf(revisionId))?.getTime() ??
      Date.now() + config.pipeline.rolloutDeadlineMs;
    const started = await driver.startInstances(input, {
      signal: guard.signal,
      deadline,
      log: (line, level) => deployLog.line(line, level),
    });
    if (!started.ok) {
      deployLog.line(started.message, 'error');
      await fail('DEPLOYING', started.message);
      return;
    }
    const switched = await driver.switchTraffic(input, started.instances).catch(async (err) => {
      await driver.stop({ instances: started.instances });
      throw err;
    });
    // The proxy swaps first, so that by the time the revision reads DEPLOYED it serves.
    const deployed = await dataSource
      .transaction((m) =>
        flow.complete(m, revisionId, 'rollout', { from: ['DEPLOYING'], message: 'Healthy and serving.' }),
      )
      .catch(async (err) => {
        await switched.revert();
        throw err;
      });
    if (!deployed) {
      await switched.revert();
      log.info('the revision moved on before it was activated');
      return;
    }
    await switched.confirm();
    deployLog.line(`Traffic switched to revision ${revisionId}.`);
    log.info({ deploymentId: input.deploymentId }, 'revision deployed on the process runtime');
  } catch (err) {
    if (!(err instanceof PortsExhaustedError)) throw err;
    await fail('DEPLOYING', `${err.message} Widen SLIPWAY_RUNTIME_PORT_MIN/MAX or delete unused deployments.`);
  } finally {
    await deployLog.close();
  }
}

/**
 * The deployment's files under the data dir: its uploaded tarballs, its revisions' built
 * artifacts, its builds' npm cache (`cache/npm/<deployment>`, see the builder's buildPaths) and
 * installed dependencies (`cache/deps/<deployment>`, the builder's DependencyCache).
 * Read from the rows before they go (revisions cascade with the deployment).
 */
async function removeFiles(config: Readonly<Config>, dataSource: DataSource, deploymentId: string): Promise<void> {
  const revisions = await new RevisionReads(dataSource.manager).idsOfDeployment(deploymentId);
  const dirs = [
    path.join(config.dataDir, 'uploads', deploymentId),
    path.join(config.dataDir, 'cache', 'npm', deploymentId),
    path.join(config.dataDir, 'cache', 'deps', deploymentId),
    ...revisions.map((id) => path.join(config.dataDir, 'artifacts', id)),
  ];
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
}
