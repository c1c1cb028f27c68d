import { queryRows, type DataSource } from '@slipway/db';
import { isRevisionTerminal, type RevisionStatus } from '@slipway/domain';
import type { JobHandler, RevisionFlow } from '@slipway/jobs';

interface BuildRow {
  status: RevisionStatus;
  attempt: number;
  source: string;
}

/**
 * `build.revision`. Source builds (git fetch, install, build, artifact) are not part of this
 * release: a revision that needs one fails honestly with BUILD_FAILED and a message saying why,
 * never a fake success. The claim (AWAITING_BUILD → BUILDING) is conditional, so a duplicate or
 * stale job (older attempt) does nothing.
 */
export function buildRevisionProcessor(dataSource: DataSource, flow: RevisionFlow): JobHandler<'build.revision'> {
  return async ({ revisionId, attempt }, { log }) => {
    const [rev] = await queryRows<BuildRow>(dataSource.manager, `SELECT status, attempt, source FROM revisions WHERE id = $1`, [revisionId]);
    if (!rev || isRevisionTerminal(rev.status) || rev.attempt !== attempt) {
      log.info({ status: rev?.status, currentAttempt: rev?.attempt }, 'build job is stale; nothing to do');
      return;
    }
    const claimed = await dataSource.transaction((m) =>
      flow.transition(m, revisionId, 'BUILDING', { from: ['AWAITING_BUILD'], set: { heartbeatAt: new Date() } }),
    );
    if (!claimed) return;
    await dataSource.transaction((m) =>
      flow.transition(m, revisionId, 'BUILD_FAILED', {
        from: ['BUILDING'],
        message:
          `Building ${rev.source} revisions from source is not available in this Slipway release yet; ` +
          'deploy a container image (source external_container) instead.',
      }),
    );
    log.warn({ source: rev.source }, 'source builds are not available; revision failed');
  };
}
