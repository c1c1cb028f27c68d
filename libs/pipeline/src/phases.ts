import type { PipelineTimings } from '@slipway/config';
import { isImageSource, type DeploymentSource, type RevisionStatus } from '@slipway/domain';
import type { JobName } from '@slipway/jobs';

export type PhaseName = 'enqueue' | 'build' | 'rollout';

/** How long each phase may take; a phase's clock starts as it is entered (`budget` names its setting). */
export type PhaseBudgets = Pick<PipelineTimings, 'enqueueDeadlineMs' | 'buildDeadlineMs' | 'rolloutDeadlineMs'>;

/**
 * One phase of a revision: the "who moves" table of docs/architecture.md as code, and what
 * decides it. The status writer (attempts and deadlines), the relay's hand-off (`from` → `entry`),
 * the flow's `begin`/`complete`/`fail` (the only way a worker starts or ends a phase), the job
 * that follows (`nextJob`), the reconciler (deadline failures, re-enqueues after a dead worker)
 * and the flow's retries all read it.
 */
export interface Phase {
  name: PhaseName;
  /** The statuses of the phase: moves within it keep its attempt count and its deadline. */
  statuses: readonly RevisionStatus[];
  /** The job that works the phase (none: the enqueue phase is the relay's). */
  job: JobName | null;
  /**
   * The hand-off: the relay moves a revision `from` one of these statuses to `entry` as it hands
   * the phase's job to Redis (RevisionFlow.onHandOff), and the phase's deadline starts.
   */
  from: readonly RevisionStatus[];
  entry: RevisionStatus;
  /** Where the phase's worker holds the revision once it took it (`begin`); the first is the one it enters. */
  working: readonly RevisionStatus[];
  /** Whether a revision passes through the phase at all (images and built revisions skip the build). */
  needed: (revision: PhaseSubject) => boolean;
  /** Where the phase's own work leaves the revision when it succeeds. */
  onSuccess: RevisionStatus;
  /** Where its deadline (or its last attempt) leaves it, with the status_message saying why. */
  onFailure: RevisionStatus;
  failureMessage: (budgetMs: number) => string;
  /** The setting bounding the phase. */
  budget: keyof PhaseBudgets;
  /** The phase its success leads to (none: the revision is done). */
  next: PhaseName | null;
  /** What the reconciler says when the phase's worker died. */
  lostMessage: string | null;
}

const minutes = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`);

/** What choosing a revision's phases and jobs needs of its row. */
export interface PhaseSubject {
  status: RevisionStatus;
  source: string;
  artifactRef: string | null;
}

const always = () => true;

/** The phases, in the order a revision that needs a build passes them. */
export const PHASES: readonly Phase[] = [
  {
    // Started (the in-flight slot is taken), its first job in the outbox: the relay hands it over.
    name: 'enqueue',
    statuses: ['CREATING', 'QUEUED'],
    job: null,
    from: [],
    entry: 'CREATING',
    working: [],
    needed: always,
    onSuccess: 'AWAITING_BUILD',
    onFailure: 'CREATE_FAILED',
    failureMessage: (ms) =>
      `The revision could not be handed to the job queue within ${minutes(ms)} (is Redis reachable?).`,
    budget: 'enqueueDeadlineMs',
    // Images and redeploys of built revisions skip the build (its `needed`).
    next: 'build',
    lostMessage: null,
  },
  {
    name: 'build',
    statuses: ['AWAITING_BUILD', 'BUILDING'],
    job: 'build.revision',
    from: ['CREATING', 'QUEUED'],
    entry: 'AWAITING_BUILD',
    working: ['BUILDING'],
    needed: (revision) => !isImageSource(revision.source as DeploymentSource) && !revision.artifactRef,
    onSuccess: 'AWAITING_DEPLOY',
    onFailure: 'BUILD_FAILED',
    failureMessage: (ms) => `The build did not finish within its deadline of ${minutes(ms)}.`,
    budget: 'buildDeadlineMs',
    next: 'rollout',
    lostMessage: 'The builder working on this revision stopped responding.',
  },
  {
    name: 'rollout',
    statuses: ['AWAITING_DEPLOY', 'DEPLOYING', 'UNKNOWN'],
    job: 'rollout.revision',
    from: ['CREATING', 'QUEUED'],
    entry: 'AWAITING_DEPLOY',
    // UNKNOWN: a listener went silent mid-rollout; its report can still end the phase.
    working: ['DEPLOYING', 'UNKNOWN'],
    needed: always,
    onSuccess: 'DEPLOYED',
    onFailure: 'DEPLOY_FAILED',
    failureMessage: (ms) => `The rollout did not become healthy within its deadline of ${minutes(ms)}.`,
    budget: 'rolloutDeadlineMs',
    next: null,
    lostMessage: 'The deployer working on this revision stopped responding.',
  },
];

/** The phase a status belongs to, or undefined (terminal statuses). */
export const phaseOf = (status: RevisionStatus): Phase | undefined => PHASES.find((p) => p.statuses.includes(status));

/** The phase of that name. */
export function phaseNamed(name: PhaseName): Phase {
  const phase = PHASES.find((p) => p.name === name);
  if (!phase) throw new Error(`No phase ${name}`);
  return phase;
}

/**
 * THE choice of a revision's next job, from its row: the job of the phase it is in (a phase just
 * entered, or one retried after its worker died), or, while it waits to be handed off, the job of
 * the first later phase it needs. Null when nothing works it (terminal).
 */
export function nextJob(revision: PhaseSubject): JobName | null {
  const phase = phaseOf(revision.status);
  if (!phase) return null;
  if (phase.job) return phase.job;
  for (let name = phase.next; name; ) {
    const later = phaseNamed(name);
    if (later.job && later.needed(revision)) return later.job;
    name = later.next;
  }
  return null;
}

/** The phase a job works. */
export function phaseOfJob(job: JobName): Phase | undefined {
  return PHASES.find((p) => p.job === job);
}

/** The phases worked by a job: entering one restarts its attempts and its clock (the enqueue phase's clock starts with the revision). */
export const WORKED_PHASES: readonly Phase[] = PHASES.filter((p) => p.job);

/** Where a revision in `status` goes when its phase's deadline passes, and the message saying so. */
export function deadlineFailure(
  status: RevisionStatus,
  budgets: PhaseBudgets,
): { to: RevisionStatus; message: string } {
  const phase = phaseOf(status) ?? PHASES[PHASES.length - 1]!;
  return { to: phase.onFailure, message: phase.failureMessage(budgets[phase.budget]) };
}
