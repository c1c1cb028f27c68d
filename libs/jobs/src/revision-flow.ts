import type { PipelineTimings } from '@slipway/config';
import { queryRows, transitionRevision, type AppliedTransition, type EntityManager, type RevisionTransitionOptions } from '@slipway/db';
import { isRevisionTerminal, REVISION_TERMINAL, type RevisionStatus } from '@slipway/domain';
import type { JobName } from './catalog.js';
import { enqueueInOutbox } from './outbox.js';

const TERMINAL = [...REVISION_TERMINAL];
const after = (ms: number) => new Date(Date.now() + ms);

/**
 * How revisions move through the pipeline, for every process: admission (start now or wait),
 * every later status change, and what follows when one ends (activate, promote the newest
 * waiting revision, skip the older ones).
 *
 * Lock order is always deployment row, then revision rows: every path that changes a revision
 * locks its deployment first, so concurrent PATCHes, reports and deletes serialize per
 * deployment instead of deadlocking. The partial unique index `revisions_one_in_flight_idx` is
 * the backstop that makes two started revisions impossible even if this code were wrong.
 */
export class RevisionFlow {
  constructor(private readonly timings: PipelineTimings) {}

  /** Locks the deployment row for the rest of the transaction. Null when it is gone. */
  async lockDeployment(manager: EntityManager, deploymentId: string): Promise<{ status: string } | null> {
    const rows = await manager.query(`SELECT status FROM deployments WHERE id = $1 FOR UPDATE`, [deploymentId]);
    return rows[0] ?? null;
  }

  /**
   * Called in the transaction that inserted `revisionId` (status CREATING): starts it when
   * nothing else of its deployment is in flight, else parks it as QUEUED.
   */
  async admit(manager: EntityManager, deploymentId: string, revisionId: string, requestId?: string): Promise<'started' | 'queued'> {
    await this.lockDeployment(manager, deploymentId);
    const busy = await this.inFlight(manager, deploymentId, revisionId);
    if (busy) {
      await transitionRevision(manager, revisionId, 'QUEUED', { from: ['CREATING'], message: `Waiting for revision ${busy} to finish.` });
      return 'queued';
    }
    await this.start(manager, revisionId, requestId);
    return 'started';
  }

  /**
   * Every status change after admission: the conditional UPDATE, then the consequences of a
   * terminal status in the same transaction. Returns null when the revision was not in a
   * status that allows `to` (someone else moved it first).
   */
  async transition(
    manager: EntityManager,
    revisionId: string,
    to: RevisionStatus,
    options: RevisionTransitionOptions = {},
  ): Promise<AppliedTransition | null> {
    const [owner] = await manager.query(`SELECT deployment_id FROM revisions WHERE id = $1`, [revisionId]);
    if (!owner) return null;
    await this.lockDeployment(manager, owner.deployment_id);
    const terminal = isRevisionTerminal(to);
    const applied = await transitionRevision(manager, revisionId, to, {
      ...options,
      set: { ...(terminal ? { deadlineAt: null } : {}), ...options.set },
    });
    if (!applied || !terminal) return applied;
    if (to === 'DEPLOYED') {
      await manager.query(
        `UPDATE deployments SET active_revision_id = $2, last_activity_at = now(), updated_at = now() WHERE id = $1`,
        [applied.deploymentId, revisionId],
      );
    }
    await this.promoteNext(manager, applied.deploymentId);
    return applied;
  }

  /**
   * Relay hook, run as the revision's job is handed to Redis: it leaves CREATING/QUEUED and its phase
   * deadline starts. Conditional: a revision interrupted meanwhile stays interrupted, and its
   * job will find it terminal and do nothing.
   */
  async onHandOff(manager: EntityManager, name: JobName, payload: Record<string, unknown>): Promise<void> {
    const revisionId = payload.revisionId as string | undefined;
    if (!revisionId) return;
    if (name === 'build.revision') {
      await this.transition(manager, revisionId, 'AWAITING_BUILD', {
        from: ['CREATING', 'QUEUED'],
        set: { deadlineAt: after(this.timings.buildDeadlineMs) },
      });
    } else if (name === 'rollout.revision') {
      await this.transition(manager, revisionId, 'AWAITING_DEPLOY', {
        from: ['CREATING', 'QUEUED'],
        set: { deadlineAt: after(this.timings.rolloutDeadlineMs) },
      });
    }
  }

  /** Starts the newest waiting revision when nothing is in flight; older waiting ones are skipped. */
  async promoteNext(manager: EntityManager, deploymentId: string, requestId?: string): Promise<string | null> {
    const deployment = await this.lockDeployment(manager, deploymentId);
    if (!deployment || deployment.status === 'AWAITING_DELETE') return null;
    if (await this.inFlight(manager, deploymentId)) return null;
    // "Newest" is the deployment's latest revision when it waits: PATCHes serialize on the
    // deployment lock, so latest_revision_id follows commit order, which created_at may not.
    const waiting: Array<{ id: string }> = await manager.query(
      `SELECT r.id FROM revisions r JOIN deployments d ON d.id = r.deployment_id
        WHERE r.deployment_id = $1 AND r.status = 'QUEUED' AND r.started_at IS NULL
        ORDER BY (r.id = d.latest_revision_id) DESC, r.created_at DESC, r.id DESC`,
      [deploymentId],
    );
    const [newest, ...older] = waiting;
    if (!newest) return null;
    for (const { id } of older) {
      await transitionRevision(manager, id, 'SKIPPED', { from: ['QUEUED'], message: `Superseded by revision ${newest.id}.` });
    }
    await this.start(manager, newest.id, requestId);
    return newest.id;
  }

  /**
   * Re-enqueues the current phase's job after its worker died (attempt + 1), or fails the
   * revision once the attempts are used up. Called by the reconciler.
   */
  async retryPhase(manager: EntityManager, revisionId: string, reason: string): Promise<AppliedTransition | null> {
    const [rev] = await manager.query(`SELECT status, attempt FROM revisions WHERE id = $1`, [revisionId]);
    if (!rev || isRevisionTerminal(rev.status)) return null;
    const building = rev.status === 'AWAITING_BUILD' || rev.status === 'BUILDING';
    if (rev.attempt + 1 >= this.timings.maxPhaseAttempts) {
      return this.transition(manager, revisionId, building ? 'BUILD_FAILED' : 'DEPLOY_FAILED', {
        message: `${reason} Gave up after ${rev.attempt + 1} attempts.`,
      });
    }
    const to = building ? 'AWAITING_BUILD' : 'AWAITING_DEPLOY';
    const applied =
      rev.status === to
        ? await this.bumpAttempt(manager, revisionId, `${reason} Retrying.`)
        : await this.transition(manager, revisionId, to, { message: `${reason} Retrying.`, set: { incrementAttempt: true, heartbeatAt: null } });
    if (applied) {
      await enqueueInOutbox(manager, building ? 'build.revision' : 'rollout.revision', { revisionId, attempt: applied.attempt });
    }
    return applied;
  }

  /** A retry that stays in the same status: new attempt, message, and an event for the history. */
  private async bumpAttempt(manager: EntityManager, revisionId: string, message: string): Promise<AppliedTransition | null> {
    const [r] = await queryRows(
      manager,
      `UPDATE revisions SET attempt = attempt + 1, status_message = $2, heartbeat_at = NULL, updated_at = now()
        WHERE id = $1 RETURNING id, deployment_id, status, attempt`,
      [revisionId, message],
    );
    if (r) {
      await manager.query(
        `INSERT INTO revision_events (revision_id, deployment_id, from_status, to_status, message) VALUES ($1, $2, $3, $3, $4)`,
        [r.id, r.deployment_id, r.status, message],
      );
    }
    return r ? { revisionId: r.id, deploymentId: r.deployment_id, from: r.status, to: r.status, attempt: r.attempt } : null;
  }

  /** Takes the in-flight slot and records the first job in the outbox. */
  private async start(manager: EntityManager, revisionId: string, requestId?: string): Promise<void> {
    const [row] = await queryRows<{ source: string; artifact_ref: string | null; attempt: number }>(
      manager,
      `UPDATE revisions SET started_at = now(), deadline_at = $2, updated_at = now()
        WHERE id = $1 RETURNING source, artifact_ref, attempt`,
      [revisionId, after(this.timings.enqueueDeadlineMs)],
    );
    if (!row) throw new Error(`Revision ${revisionId} vanished while starting`);
    // Images and redeploys of built revisions need no build.
    const job: JobName = row.source === 'external_container' || row.artifact_ref ? 'rollout.revision' : 'build.revision';
    await enqueueInOutbox(manager, job, { revisionId, attempt: row.attempt, ...(requestId ? { requestId } : {}) });
  }

  private async inFlight(manager: EntityManager, deploymentId: string, except?: string): Promise<string | null> {
    const rows: Array<{ id: string }> = await manager.query(
      `SELECT id FROM revisions
        WHERE deployment_id = $1 AND started_at IS NOT NULL AND status <> ALL($2::text[]) AND id <> $3
        LIMIT 1`,
      [deploymentId, TERMINAL, except ?? '00000000-0000-0000-0000-000000000000'],
    );
    return rows[0]?.id ?? null;
  }
}
