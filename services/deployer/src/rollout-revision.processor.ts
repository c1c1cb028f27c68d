import type { Config } from '@slipway/config';
import { queryRows, type DataSource } from '@slipway/db';
import { isRevisionTerminal, type RevisionStatus } from '@slipway/domain';
import { PhaseGuard, RevisionLogWriter, type JobContext, type JobHandler, type RevisionFlow } from '@slipway/jobs';
import { ArtifactError, PortsExhaustedError } from '@slipway/runtime';
import { provisionDeployment } from './provision-deployment.processor.js';
import { parkUntilOwner, type RevisionRuntime, type RuntimeSupervisor } from './runtime-supervisor.js';


interface RolloutRow {
  status: RevisionStatus;
  attempt: number;
  source: string;
  deployment_id: string;
  deployment_status: string;
}

/**
 * `rollout.revision`. The revision's deployment gets its database first (provisioning is
 * idempotent, so a rollout never waits on a lost provision job). Then by runtime:
 * - `external_container` → the listener runtime: DEPLOYING publishes the revision in its
 *   listener's desired state (CONTRACT C12); the agent's report ends it, the phase deadline
 *   (reconciler) bounds it.
 * - `repohost` / `upload` → the process runtime (`rolloutProcessRevision`), on the deployer
 *   that owns it (single node; see RuntimeSupervisor).
 */
export function rolloutRevisionProcessor(
  config: Readonly<Config>,
  dataSource: DataSource,
  flow: RevisionFlow,
  supervisor: RuntimeSupervisor,
): JobHandler<'rollout.revision'> {
  return async ({ revisionId, attempt }, { job, log }) => {
    const load = async () =>
      (
        await queryRows<RolloutRow>(
          dataSource.manager,
          // FOR SHARE: the relay adds this job inside the transaction that moves the revision to
          // AWAITING_DEPLOY, so the job can arrive before that commits. Waiting for the relay's
          // row lock means we read the committed status instead of taking the job for stale.
          `SELECT r.status, r.attempt, r.source, r.deployment_id, d.status AS deployment_status
             FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1
              FOR SHARE OF r`,
          [revisionId],
        )
      )[0];
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
      if (rev.deployment_status === 'AWAITING_DATABASE') await provisionDeployment(config, dataSource, rev.deployment_id, log);

      if (rev.source === 'external_container') {
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
      if (!supervisor.isOwner) {
        log.debug('not the process runtime owner; parking the rollout');
        await parkUntilOwner(job);
      }
      await rolloutProcessRevision(config, dataSource, flow, supervisor, revisionId, guard, log);
    } finally {
      guard.stop();
    }
  };
}

/**
 * A cloud-hosted revision on the process runtime: AWAITING_DEPLOY → DEPLOYING, start its
 * instances under a phase guard (interruption and deadline reach the health wait), switch the
 * proxy, DEPLOYED in the transaction that retires the old instances. Any failure leaves the
 * old instances serving and records DEPLOY_FAILED with the failed instance's last log lines.
 * A bad artifact or an exhausted port range fails at once; anything else unexpected throws, and
 * the reconciler retries the phase.
 */
async function rolloutProcessRevision(
  config: Readonly<Config>,
  dataSource: DataSource,
  flow: RevisionFlow,
  supervisor: RuntimeSupervisor,
  revisionId: string,
  guard: PhaseGuard,
  log: JobContext['log'],
): Promise<void> {
  const fail = (from: RevisionStatus, message: string) =>
    dataSource.transaction((m) => flow.transition(m, revisionId, 'DEPLOY_FAILED', { from: [from], message }));
  let rev: RevisionRuntime;
  try {
    rev = await supervisor.revision(revisionId);
  } catch (err) {
    if (!(err instanceof ArtifactError)) throw err;
    await fail('AWAITING_DEPLOY', err.message);
    return;
  }
  const deploying = await dataSource.transaction((m) =>
    flow.transition(m, revisionId, 'DEPLOYING', { from: ['AWAITING_DEPLOY'], message: 'Starting instances; waiting for GET /ok.' }),
  );
  if (!deploying) return;
  const deployLog = new RevisionLogWriter(dataSource, revisionId, 'deploy', rev.secretValues);
  try {
    for (const warning of rev.artifact.warnings) deployLog.line(warning, 'warn');
    const [row] = await queryRows<{ deadline_at: Date | null }>(dataSource.manager, `SELECT deadline_at FROM revisions WHERE id = $1`, [revisionId]);
    const deadline = row?.deadline_at ? new Date(row.deadline_at).getTime() : Date.now() + config.pipeline.rolloutDeadlineMs;
    const outcome = await supervisor.rollout(rev, {
      signal: guard.signal,
      deadline,
      deployLog,
      commit: (m) => flow.transition(m, revisionId, 'DEPLOYED', { from: ['DEPLOYING'], message: 'Healthy and serving.' }),
    });
    if (outcome.ok) {
      log.info({ deploymentId: rev.deploymentId }, 'revision deployed on the process runtime');
    } else if (outcome.lost) {
      log.info(outcome.message);
    } else {
      deployLog.line(outcome.message, 'error');
      await fail('DEPLOYING', outcome.message);
    }
  } catch (err) {
    if (!(err instanceof PortsExhaustedError)) throw err;
    await fail('DEPLOYING', `${err.message} Widen SLIPWAY_RUNTIME_PORT_MIN/MAX or delete unused deployments.`);
  } finally {
    await deployLog.close();
  }
}
