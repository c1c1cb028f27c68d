import type { Config } from '@slipway/config';
import { queryRows, type DataSource } from '@slipway/db';
import { isRevisionTerminal, type RevisionStatus } from '@slipway/domain';
import type { JobHandler, RevisionFlow } from '@slipway/jobs';
import { provisionDeployment } from './provision-deployment.processor.js';

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
 * - source builds would go to the process runtime, which is not part of this release: such a
 *   revision fails honestly (it cannot get here today: its build fails first).
 */
export function rolloutRevisionProcessor(config: Readonly<Config>, dataSource: DataSource, flow: RevisionFlow): JobHandler<'rollout.revision'> {
  return async ({ revisionId, attempt }, { log }) => {
    const load = async () =>
      (
        await queryRows<RolloutRow>(
          dataSource.manager,
          `SELECT r.status, r.attempt, r.source, r.deployment_id, d.status AS deployment_status
             FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1`,
          [revisionId],
        )
      )[0];
    const rev = await load();
    if (!rev || isRevisionTerminal(rev.status) || rev.attempt !== attempt || rev.status !== 'AWAITING_DEPLOY') {
      log.info({ status: rev?.status, currentAttempt: rev?.attempt }, 'rollout job is stale; nothing to do');
      return;
    }
    // Mark the phase as worked on: the reconciler treats a quiet active job as a dead worker.
    await dataSource.query(`UPDATE revisions SET heartbeat_at = now() WHERE id = $1 AND status = 'AWAITING_DEPLOY'`, [revisionId]);
    if (rev.deployment_status === 'AWAITING_DATABASE') await provisionDeployment(config, dataSource, rev.deployment_id, log);

    if (rev.source === 'external_container') {
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
    await dataSource.transaction((m) =>
      flow.transition(m, revisionId, 'DEPLOY_FAILED', {
        from: ['AWAITING_DEPLOY'],
        message: `Running ${rev.source} revisions is not available in this Slipway release yet.`,
      }),
    );
  };
}
