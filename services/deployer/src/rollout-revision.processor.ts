import type { Config } from '@slipway/config';
import type { DataSource } from '@slipway/db';
import { isRevisionTerminal, type RevisionStatus } from '@slipway/domain';
import { type JobContext, type JobHandler } from '@slipway/jobs';
import { PhaseGuard, RevisionLogWriter, RevisionReads, type RevisionFlow } from '@slipway/pipeline';
import { ArtifactError, DataAccessError, PortsExhaustedError, type RuntimeDriver, type StartInstancesInput } from '@slipway/runtime';
import { parkUntilOwner } from './park.js';
import { provisionDeployment } from './provision-deployment.processor.js';
import type { DeploymentDataAccess } from './provisioning/data-access.js';
import type { RevisionInputs } from './revision-inputs.js';

/**
 * `rollout.revision`. The revision's deployment gets its database first (provisioning is
 * idempotent, so a rollout never waits on a lost provision job). Then by runtime:
 * - `external_container` → the listener runtime: DEPLOYING publishes the revision in its
 *   listener's desired state (docs/api.md, Listener agent protocol); the agent's report ends it, the phase deadline
 *   (reconciler) bounds it.
 * - `repohost` / `upload` → the process runtime (`rolloutProcessRevision`), on the deployer
 *   that owns it (single node; see ProcessDriver); `internal_docker` and `external_container`
 *   without a listener the same way, as containers of the embedded container runtime (the
 *   image pulled and unpacked once per digest; an image that cannot run fails with why).
 */
export function rolloutRevisionProcessor(
  config: Readonly<Config>,
  dataSource: DataSource,
  flow: RevisionFlow,
  driver: RuntimeDriver,
  inputs: RevisionInputs,
  dataAccess: DeploymentDataAccess,
): JobHandler<'rollout.revision'> {
  return async ({ revisionId, attempt }, { job, log }) => {
    // Waits for the relay's row lock (loadForRollout): the job can arrive before its hand-off commits.
    const load = () => new RevisionReads(dataSource.manager).loadForRollout(revisionId);
    const rev = await load();
    if (!rev || isRevisionTerminal(rev.status) || rev.attempt !== attempt || rev.status !== 'AWAITING_DEPLOY') {
      log.info({ status: rev?.status, currentAttempt: rev?.attempt }, 'rollout job is stale; nothing to do');
      return;
    }
    // Heartbeats from the first moment to the last: the reconciler takes an active job that has
    // gone quiet for a dead worker, and a rollout can wait a while before DEPLOYING (provisioning,
    // the previous rollout of the same deployment draining).
    const guard = new PhaseGuard(dataSource, revisionId, ['AWAITING_DEPLOY', 'DEPLOYING'], config.pipeline, attempt);
    await guard.start();
    try {
      if (rev.deployment_status === 'AWAITING_DATABASE' && !(await provisionOrFail(dataAccess, dataSource, flow, rev.deployment_id, revisionId, log))) return;

      if (rev.source === 'external_container' && rev.listener_id) {
        guard.stop(); // from DEPLOYING on, the listener reports and the deadline bounds it
        const applied = await dataSource.transaction((m) =>
          flow.transition(m, revisionId, 'DEPLOYING', {
            from: ['AWAITING_DEPLOY'],
            message: 'Published to the listener; waiting for its report.',
            set: { heartbeatAt: null },
          }),
        );
        log.info({ applied: !!applied }, 'revision published to its listener');
        return;
      }
      // Local processes are the runtime owner's alone: elsewhere the job waits for it.
      if (!driver.isOwner) {
        log.debug('not the process runtime owner; parking the rollout');
        await parkUntilOwner(job);
      }
      await rolloutProcessRevision(config, dataSource, flow, { driver, inputs }, revisionId, guard, log);
    } finally {
      guard.stop();
    }
  };
}

/**
 * A cloud-hosted revision on the process runtime: AWAITING_DEPLOY → DEPLOYING, the driver starts
 * its instances under a phase guard (interruption and deadline reach the health wait) and
 * switches traffic to them, DEPLOYED, then the driver retires the old instances (or, when the
 * transition lost, puts traffic back and stops the new ones). Any failure leaves the old
 * instances serving and records DEPLOY_FAILED with the driver's message (the failed instance's
 * last log lines). A bad artifact or an exhausted port range fails at once; anything else
 * unexpected throws, and the reconciler retries the phase.
 */
async function rolloutProcessRevision(
  config: Readonly<Config>,
  dataSource: DataSource,
  flow: RevisionFlow,
  { driver, inputs }: { driver: RuntimeDriver; inputs: RevisionInputs },
  revisionId: string,
  guard: PhaseGuard,
  log: JobContext['log'],
): Promise<void> {
  const fail = (from: RevisionStatus, message: string) =>
    dataSource.transaction((m) => flow.transition(m, revisionId, 'DEPLOY_FAILED', { from: [from], message }));
  let input: StartInstancesInput;
  try {
    input = await inputs.get(revisionId);
  } catch (err) {
    if (!(err instanceof ArtifactError) && !(err instanceof DataAccessError)) throw err;
    await fail('AWAITING_DEPLOY', err.message);
    return;
  }
  const deploying = await dataSource.transaction((m) =>
    flow.transition(m, revisionId, 'DEPLOYING', { from: ['AWAITING_DEPLOY'], message: 'Starting instances; waiting for GET /ok.' }),
  );
  if (!deploying) return;
  const deployLog = new RevisionLogWriter(dataSource, revisionId, 'deploy', input.secretValues);
  try {
    for (const note of input.notes ?? []) deployLog.line(note.line, note.level);
    const deadline = (await new RevisionReads(dataSource.manager).deadlineOf(revisionId))?.getTime() ?? Date.now() + config.pipeline.rolloutDeadlineMs;
    const started = await driver.startInstances(input, { signal: guard.signal, deadline, log: (line, level) => deployLog.line(line, level) });
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
      .transaction((m) => flow.transition(m, revisionId, 'DEPLOYED', { from: ['DEPLOYING'], message: 'Healthy and serving.' }))
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
 * Provisions the revision's deployment; a store that cannot give it credentials of its own (Redis
 * without ACLs) fails the revision with that reason instead of retrying. False: failed.
 */
async function provisionOrFail(
  dataAccess: DeploymentDataAccess,
  dataSource: DataSource,
  flow: RevisionFlow,
  deploymentId: string,
  revisionId: string,
  log: JobContext['log'],
): Promise<boolean> {
  try {
    await provisionDeployment(dataAccess, dataSource, deploymentId, log);
    return true;
  } catch (err) {
    if (!(err instanceof DataAccessError)) throw err;
    await dataSource.transaction((m) => flow.transition(m, revisionId, 'DEPLOY_FAILED', { from: ['AWAITING_DEPLOY'], message: err.message }));
    return false;
  }
}
