import type { PipelineTimings } from '@slipway/config';
import type { RevisionStatus } from '@slipway/domain';
import { JOB_CATALOG, type JobName } from '@slipway/jobs';

export type PhaseName = 'enqueue' | 'build' | 'rollout';

/** How long each phase may take; a phase's clock starts as it is entered (`budget` names its setting). */
export type PhaseBudgets = Pick<PipelineTimings, 'enqueueDeadlineMs' | 'buildDeadlineMs' | 'rolloutDeadlineMs'>;

/**
 * One phase of a revision: the "who moves" table of docs/architecture.md as code. The status
 * writer (attempts and deadlines), the relay's hand-off, the reconciler (deadline failures,
 * re-enqueues after a dead worker) and the flow's retries all read it.
 */
export interface Phase {
  name: PhaseName;
  /** The statuses of the phase: moves within it keep its attempt count and its deadline. */
  statuses: readonly RevisionStatus[];
  /**
   * The job that works the phase (none: the enqueue phase is the relay's). Its catalog entry's
   * `handOff` is how the phase is entered: `from` those statuses to `to` as the relay enqueues it.
   */
  job: JobName | null;
  /** The statuses the phase is entered from, and the status it is entered at. */
  from: readonly RevisionStatus[];
  entry: RevisionStatus;
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

const handOff = (job: JobName) => {
  const declared = JOB_CATALOG[job].handOff;
  if (!declared) throw new Error(`${job} has no hand-off in the job catalog`);
  return { job, from: declared.from, entry: declared.to };
};

/** The phases, in the order a revision that needs a build passes them. */
export const PHASES: readonly Phase[] = [
  {
    // Started (the in-flight slot is taken), its first job in the outbox: the relay hands it over.
    name: 'enqueue',
    statuses: ['CREATING', 'QUEUED'],
    job: null,
    from: [],
    entry: 'CREATING',
    onSuccess: 'AWAITING_BUILD',
    onFailure: 'CREATE_FAILED',
    failureMessage: (ms) =>
      `The revision could not be handed to the job queue within ${minutes(ms)} (is Redis reachable?).`,
    budget: 'enqueueDeadlineMs',
    // Images and redeploys of built revisions skip the build (RevisionFlow.start).
    next: 'build',
    lostMessage: null,
  },
  {
    name: 'build',
    statuses: ['AWAITING_BUILD', 'BUILDING'],
    ...handOff('build.revision'),
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
    ...handOff('rollout.revision'),
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
