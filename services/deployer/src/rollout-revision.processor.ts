import type { Config } from '@slipway/config';
import type { DataSource } from '@slipway/db';
import { isRevisionTerminal, rolloutProvisionsFirst } from '@slipway/domain';
import type { JobContext, JobHandler } from '@slipway/jobs';
import { PhaseGuard, RevisionReads, type RevisionFlow } from '@slipway/pipeline';
import { DataAccessError } from '@slipway/runtime';
import { placementOf, type Placements } from './placement/placement.js';
import { provisionDeployment } from './provision-deployment.processor.js';

/**
 * `rollout.revision`. A stale job (the revision moved on, or a later attempt exists) does
 * nothing. Otherwise the revision's deployment gets its database first when it awaits one
 * (rolloutProvisionsFirst), then its placement rolls it out: the embedded runtime starts its
 * instances and switches traffic, a listener's cluster is told through the desired state (see
 * Placement).
 */
export function rolloutRevisionProcessor(
  config: Readonly<Config>,
  dataSource: DataSource,
  flow: RevisionFlow,
  placements: Placements,
): JobHandler<'rollout.revision'> {
  return async ({ revisionId, attempt }, { job, log }) => {
    // Waits for the relay's row lock unless the hand-off is seen committed (loadForRollout).
    const rev = await new RevisionReads(dataSource.manager).loadForRollout(revisionId, attempt);
    if (!rev || isRevisionTerminal(rev.status) || rev.attempt !== attempt || rev.status !== 'AWAITING_DEPLOY') {
      log.info({ status: rev?.status, currentAttempt: rev?.attempt }, 'rollout job is stale; nothing to do');
      return;
    }
    const placement = placementOf(placements, { listenerId: rev.listener_id });
    const provision = rolloutProvisionsFirst({
      status: rev.deployment_status,
      listenerId: rev.listener_id,
      databaseRecorded: rev.database_recorded,
    });
    // Heartbeats from the first moment to the last: the reconciler takes an active job that has
    // gone quiet for a dead worker, and a rollout can wait a while before DEPLOYING (provisioning,
    // the previous rollout of the same deployment draining). One that begins at once needs none.
    const guard = new PhaseGuard(dataSource, revisionId, ['AWAITING_DEPLOY', 'DEPLOYING'], config.pipeline, attempt);
    if (provision || !placement.beginsAtOnce) await guard.start();
    try {
      if (
        provision &&
        !(await provisionOrFail(config, placements, dataSource, flow, rev.deployment_id, revisionId, log))
      )
        return;
      await placement.rollout(revisionId, guard, { job, log });
    } finally {
      guard.stop();
    }
  };
}

/**
 * Provisions the revision's deployment; a store that cannot give it credentials of its own (Redis
 * without ACLs) fails the revision with that reason instead of retrying. False: failed.
 */
async function provisionOrFail(
  config: Readonly<Config>,
  placements: Placements,
  dataSource: DataSource,
  flow: RevisionFlow,
  deploymentId: string,
  revisionId: string,
  log: JobContext['log'],
): Promise<boolean> {
  try {
    await provisionDeployment(placements, dataSource, deploymentId, log, config.databaseUrl);
    return true;
  } catch (err) {
    if (!(err instanceof DataAccessError)) throw err;
    await dataSource.transaction((m) =>
      flow.fail(m, revisionId, 'rollout', { from: ['AWAITING_DEPLOY'], message: err.message }),
    );
    return false;
  }
}
