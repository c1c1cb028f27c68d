import type { PipelineTimings } from '@slipway/config';
import { DeploymentRepository, type EntityManager, type Rider } from '@slipway/db';
import { isRevisionTerminal, type DeploymentStatus, type RevisionStatus } from '@slipway/domain';
import { enqueueInOutbox, outboxJob, type JobName, type OutboxJob } from '@slipway/jobs';
import { nextJob, phaseNamed, phaseOf, WORKED_PHASES, type PhaseName } from './phases.js';
import { RevisionRepository, type NewRevision } from './revision.repository.js';
import {
  startDeadline,
  transitionRevision,
  writeRevision,
  writeRevisions,
  type AppliedTransition,
  type RevisionTransitionOptions,
  type RevisionTransitionSet,
} from './status-transitions.js';

/** How a worker starts or ends its phase (`begin`, `complete`, `fail`). */
export interface PhaseStep {
  message: string | null;
  /** Only while the revision is at this attempt of the phase: a stale worker's step does nothing. */
  attempt?: number;
  /** Narrows the statuses the step may leave (within the phase's own). */
  from?: readonly RevisionStatus[];
  set?: RevisionTransitionSet;
  /** Carried by the job that follows (`complete`). */
  requestId?: string;
}

/**
 * How revisions move through the pipeline, for every process: admission (start now or wait),
 * every later status change, and what follows when one ends (activate, promote the newest
 * waiting revision, skip the older ones).
 *
 * Lock order is always deployment row, then revision rows, so concurrent PATCHes, reports and
 * deletes serialize per deployment instead of deadlocking. Every status change is made here (the
 * status UPDATE is reached through this class only), and each takes the deployment lock first
 * (`lockDeployment`, the one `DeploymentRepository.lock`): `admit`, `transition`, `promoteNext`
 * and `retryPhase`; `insertFirst` needs none, its deployment row being one its own transaction
 * inserted, which no other can see yet. Callers that lock or write revision rows themselves take
 * the same lock first: a revision's insert (`insertAsLatest`, unless the deployment is the
 * transaction's own), a listener's report (its heartbeat), the builder's ownership check and
 * retention's artifact prune. Three writes take no deployment lock and need none:
 * `RevisionRepository.beat` (the phase guard) and `recordConfig` (the builder's commit) change no
 * status and run as one autocommit statement that locks only its revision row and waits for
 * nothing else while holding it, so it cannot close a deadlock cycle;
 * `onHandOff` and `beginAll` are explained below. The partial unique index `revisions_one_in_flight_idx` is the
 * backstop that makes two started revisions impossible even if this code were wrong.
 */
export class RevisionFlow {
  constructor(private readonly timings: PipelineTimings) {}

  /** The revision rows of `manager`'s transaction (reads, and writes that change no status). */
  private revisions(manager: EntityManager): RevisionRepository {
    return new RevisionRepository(manager);
  }

  /**
   * The status UPDATE (`transitionRevision`), with this pipeline's phase deadlines: the raw
   * write, which only this class reaches (its callers lock and follow up as `transition` does).
   */
  private write(
    manager: EntityManager,
    revisionId: string,
    to: RevisionStatus,
    options: RevisionTransitionOptions = {},
  ): Promise<AppliedTransition | null> {
    return transitionRevision(manager, revisionId, to, options, this.timings);
  }

  /** Locks the deployment row for the rest of the transaction (`DeploymentRepository.lock`). Null when it is gone. */
  lockDeployment(manager: EntityManager, deploymentId: string): Promise<{ status: DeploymentStatus } | null> {
    return new DeploymentRepository(manager).lock(deploymentId);
  }

  /**
   * Called in the transaction that inserted `revisionId` (status CREATING): starts it when
   * nothing else of its deployment is in flight, else parks it as QUEUED.
   */
  async admit(
    manager: EntityManager,
    deploymentId: string,
    revisionId: string,
    requestId?: string,
  ): Promise<'started' | 'queued'> {
    await this.lockDeployment(manager, deploymentId);
    const busy = await this.revisions(manager).inFlight(deploymentId, revisionId);
    if (busy) {
      await this.write(manager, revisionId, 'QUEUED', {
        from: ['CREATING'],
        message: `Waiting for revision ${busy} to finish.`,
      });
      return 'queued';
    }
    await this.start(manager, revisionId, requestId);
    return 'started';
  }

  /**
   * Inserts the first revision of a deployment inserted in this same transaction, and admits it:
   * nothing else of it can be in flight and its row lock is already ours, so it is inserted
   * started (the insert sets what `start` would) and its first job is recorded after `alongside`
   * (the deployment's own jobs), by the revision's insert itself, which also carries `rider`
   * (the create's slot claim) and returns its value: one statement in all.
   */
  async insertFirst<T = undefined>(
    manager: EntityManager,
    values: NewRevision,
    requestId?: string,
    alongside: readonly OutboxJob[] = [],
    rider?: Rider<T>,
  ): Promise<T> {
    const first = nextJob({ status: 'CREATING', source: values.source, artifactRef: values.artifactRef ?? null });
    if (!first) throw new Error(`No job works revision ${values.id}`);
    const job = outboxJob(first, {
      revisionId: values.id,
      attempt: 0,
      ...(requestId ? { requestId } : {}),
    });
    return this.revisions(manager).insertAsLatest(
      values,
      { deadlineAt: startDeadline(this.timings) },
      [...alongside, job],
      rider,
    );
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
    const deploymentId = await this.revisions(manager).deploymentOf(revisionId);
    if (!deploymentId) return null;
    await this.lockDeployment(manager, deploymentId);
    const applied = await this.write(manager, revisionId, to, options);
    if (!applied || !isRevisionTerminal(to)) return applied;
    if (to === 'DEPLOYED') {
      await new DeploymentRepository(manager).activateRevision(applied.deploymentId, revisionId);
    }
    await this.promoteNext(manager, applied.deploymentId);
    return applied;
  }

  /**
   * A worker takes its phase: the phase's entry status to its first working status (the
   * builder's AWAITING_BUILD → BUILDING, a placement's AWAITING_DEPLOY → DEPLOYING). Null when the
   * revision was not waiting for this phase (a duplicate or stale job).
   */
  begin(
    manager: EntityManager,
    revisionId: string,
    name: PhaseName,
    step: PhaseStep,
  ): Promise<AppliedTransition | null> {
    const phase = phaseNamed(name);
    const to = phase.working[0];
    if (!to) throw new Error(`The ${name} phase has no worker to begin it`);
    return this.transition(manager, revisionId, to, this.guarded(step, step.from ?? [phase.entry]));
  }

  /**
   * `begin` of several revisions at once, in one statement (the deployer begins the listener
   * rollouts whose jobs arrive together so): each moves on its own from the phase's entry to its
   * first working status; the result lists those that moved. Like `onHandOff` it takes no
   * deployment lock: the move is not terminal, so nothing follows it on the deployment, and it
   * locks only the revision rows, in id order, each its deployment's in-flight one. A delete or
   * a deadline, which lock the deployment and then the revision, finds the row as this left it,
   * or leaves it so that this write, conditional on the status, moves nothing.
   */
  async beginAll(
    manager: EntityManager,
    revisionIds: readonly string[],
    name: PhaseName,
    step: Pick<PhaseStep, 'message' | 'set'>,
  ): Promise<string[]> {
    const phase = phaseNamed(name);
    const to = phase.working[0];
    if (!to) throw new Error(`The ${name} phase has no worker to begin it`);
    const applied = await writeRevisions(
      manager,
      revisionIds,
      { to, from: [phase.entry], message: step.message, ...(step.set ? { set: step.set } : {}) },
      this.timings,
    );
    return applied.map((a) => a.revisionId);
  }

  /**
   * A worker ends its phase well: the phase's working statuses to its success status, and, in
   * the same transaction, the job of the phase that follows (`nextJob`) recorded in the outbox.
   * Null when the revision was no longer this worker's (interrupted, past its deadline, retried).
   */
  async complete(
    manager: EntityManager,
    revisionId: string,
    name: PhaseName,
    step: PhaseStep,
  ): Promise<AppliedTransition | null> {
    const phase = phaseNamed(name);
    const applied = await this.transition(
      manager,
      revisionId,
      phase.onSuccess,
      this.guarded(step, step.from ?? phase.working),
    );
    if (!applied) return null;
    const job = nextJob({ status: applied.to, source: applied.source, artifactRef: applied.artifactRef });
    if (job) {
      // Entering the next phase restarted `attempt` at 0 (its full retry budget), so the job id
      // (e.g. rollout-<id>-a0) matches what its worker and the reconciler derive from the row.
      await enqueueInOutbox(manager, job, {
        revisionId,
        attempt: applied.attempt,
        ...(step.requestId ? { requestId: step.requestId } : {}),
      });
    }
    return applied;
  }

  /** A worker ends its phase in failure: to the phase's failure status, saying why. Null when no longer its. */
  fail(
    manager: EntityManager,
    revisionId: string,
    name: PhaseName,
    step: PhaseStep,
  ): Promise<AppliedTransition | null> {
    const phase = phaseNamed(name);
    return this.transition(manager, revisionId, phase.onFailure, this.guarded(step, step.from ?? phase.statuses));
  }

  private guarded(step: PhaseStep, from: readonly RevisionStatus[]): RevisionTransitionOptions {
    return {
      from,
      message: step.message,
      ...(step.attempt === undefined ? {} : { attempt: step.attempt }),
      ...(step.set ? { set: step.set } : {}),
    };
  }

  /**
   * Relay hook, run as a batch of jobs is handed to Redis: their revisions leave
   * CREATING/QUEUED and their phase deadline starts, in one statement per target status.
   * Conditional: a revision interrupted meanwhile stays interrupted, and its job will find it
   * terminal and do nothing (retry jobs find their revision already past these statuses).
   *
   * The one transition that takes no deployment lock: it is not terminal, so nothing follows
   * it on the deployment, and the relay holds these row locks across its Redis call — taking
   * a batch's deployment locks there would stall every PATCH and DELETE of those deployments
   * meanwhile. It locks revision rows only, in id order, and only those it moves; a started
   * revision is the only open one of its deployment with a hand-off, so no other writer needs
   * two of them (Postgres' deadlock detection stays the backstop: the relay then goes row by row).
   */
  async onHandOff(
    manager: EntityManager,
    jobs: ReadonlyArray<{ name: JobName; payload: Record<string, unknown> }>,
  ): Promise<void> {
    for (const phase of WORKED_PHASES) {
      const ids = jobs
        .filter((j) => j.name === phase.job && typeof j.payload.revisionId === 'string')
        .map((j) => j.payload.revisionId as string);
      // A phase's entry is never terminal: nothing follows per revision, so one statement moves them all.
      await writeRevisions(manager, ids, { to: phase.entry, from: [...phase.from] }, this.timings);
    }
  }

  /** Starts the newest waiting revision when nothing is in flight; older waiting ones are skipped. */
  async promoteNext(manager: EntityManager, deploymentId: string, requestId?: string): Promise<string | null> {
    const deployment = await this.lockDeployment(manager, deploymentId);
    if (!deployment || deployment.status === 'AWAITING_DELETE') return null;
    const revisions = this.revisions(manager);
    if (await revisions.inFlight(deploymentId)) return null;
    const [newest, ...older] = await revisions.waiting(deploymentId);
    if (!newest) return null;
    for (const id of older) {
      await this.write(manager, id, 'SKIPPED', { from: ['QUEUED'], message: `Superseded by revision ${newest}.` });
    }
    await this.start(manager, newest, requestId);
    return newest;
  }

  /**
   * Re-enqueues the current phase's job after its worker died (attempt + 1), or fails the
   * revision once the attempts are used up. Called by the reconciler. The revision is read
   * under its deployment's lock and its own, and the write is conditional on the status and
   * attempt read: a worker that reported meanwhile wins, and this retry does nothing.
   */
  async retryPhase(manager: EntityManager, revisionId: string, reason: string): Promise<AppliedTransition | null> {
    const revisions = this.revisions(manager);
    const deploymentId = await revisions.deploymentOf(revisionId);
    if (!deploymentId) return null;
    await this.lockDeployment(manager, deploymentId);
    const rev = await revisions.lockedPhase(revisionId);
    const phase = rev && phaseOf(rev.status);
    // Only a phase worked by a job has a job to retry; the enqueue phase is the relay's.
    if (!rev || !phase?.job) return null;
    const job = nextJob({ status: phase.entry, source: rev.source, artifactRef: rev.artifactRef });
    const guard = { from: [rev.status], attempt: rev.attempt };
    if (rev.attempt + 1 >= this.timings.maxPhaseAttempts) {
      return this.transition(manager, revisionId, phase.onFailure, {
        ...guard,
        message: `${reason} Gave up after ${rev.attempt + 1} attempts.`,
      });
    }
    const applied = await this.write(manager, revisionId, phase.entry, {
      ...guard,
      retry: true,
      message: `${reason} Retrying.`,
      set: { heartbeatAt: null },
    });
    if (applied && job) {
      await enqueueInOutbox(manager, job, { revisionId, attempt: applied.attempt });
    }
    return applied;
  }

  /**
   * Takes the deployment's in-flight slot for a waiting (CREATING/QUEUED, not started) revision,
   * whose enqueue deadline starts, and records the first job in the outbox.
   */
  private async start(manager: EntityManager, revisionId: string, requestId?: string): Promise<void> {
    const row = await writeRevision(manager, revisionId, { from: ['CREATING', 'QUEUED'], start: true }, this.timings);
    if (!row) throw new Error(`Revision ${revisionId} vanished while starting`);
    const job = nextJob({ status: 'CREATING', source: row.source, artifactRef: row.artifactRef });
    if (!job) throw new Error(`No job works revision ${revisionId}`);
    await enqueueInOutbox(manager, job, {
      revisionId,
      attempt: row.attempt,
      ...(requestId ? { requestId } : {}),
    });
  }
}
