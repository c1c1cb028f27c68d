import { queryRows, type EntityManager } from '@slipway/db';
import {
  isRevisionTerminal,
  revisionSourcesOf,
  toStorableText,
  toStorableValue,
  type RevisionStatus,
} from '@slipway/domain';
import { PHASES, phaseOf, type PhaseBudgets } from './phases.js';

/** Columns a write may set besides status, attempt and deadline (those follow the rules below). */
export interface RevisionTransitionSet {
  heartbeatAt?: Date | null;
  imageUri?: string | null;
  artifactRef?: string | null;
  /** When retention forgot the artifact (with `artifactRef: null`). */
  artifactPrunedAt?: Date | null;
  /** Merged into source_revision_config (e.g. the resolved repo_commit_sha). */
  revisionConfig?: Record<string, unknown>;
}

export interface RevisionTransitionOptions {
  message?: string | null;
  /** Narrows the allowed `from` statuses (intersected with the transition table). */
  from?: readonly RevisionStatus[];
  /** Applies only while the row is at this attempt: a stale worker's write finds nothing. */
  attempt?: number;
  /**
   * A retry of the current phase: attempt + 1, and `to` may be re-entered from `to` itself (a
   * job lost while its revision still waited for a worker). The phase keeps its deadline.
   */
  retry?: boolean;
  set?: RevisionTransitionSet;
}

export interface AppliedTransition {
  revisionId: string;
  deploymentId: string;
  from: RevisionStatus;
  to: RevisionStatus;
  attempt: number;
  /** What choosing the revision's next job needs (`nextJob`). */
  source: string;
  artifactRef: string | null;
}

/** What a write of a revision row changed; `null` from the write when the row was not as required. */
interface AppliedWrite extends AppliedTransition {
  overdue: boolean;
}

/**
 * The phases worked by a job (phases.ts) have a deadline and an attempt count of their own. A
 * transition that enters one from outside it restarts both (attempt 0, a fresh deadline); moves
 * within a phase keep them; a terminal status clears the deadline. The enqueue phase's clock
 * starts with the revision (`start`), not with a status change: CREATING → QUEUED keeps it.
 */
const workedPhaseOf = (status: RevisionStatus) => {
  const phase = phaseOf(status);
  return phase?.job ? phase : undefined;
};

/** The deadline a revision entering `to` gets (docs/architecture.md, Rules: every phase has a deadline). */
function phaseDeadline(to: RevisionStatus | 'started', budgets: PhaseBudgets | undefined): Date | null {
  if (to !== 'started' && isRevisionTerminal(to)) return null;
  const phase = to === 'started' ? PHASES[0] : phaseOf(to);
  const ms = phase && budgets?.[phase.budget];
  if (ms === undefined) throw new Error(`Entering ${to} needs the pipeline's phase budgets`);
  return new Date(Date.now() + ms);
}

/** When a revision started now must be handed off (its first phase's deadline): `start`'s, or an insert's that starts it. */
export const startDeadline = (budgets: PhaseBudgets | undefined): Date => phaseDeadline('started', budgets)!;

const COLUMN: Record<Exclude<keyof RevisionTransitionSet, 'revisionConfig'>, string> = {
  heartbeatAt: 'heartbeat_at',
  imageUri: 'image_uri',
  artifactRef: 'artifact_ref',
  artifactPrunedAt: 'artifact_pruned_at',
};

/** One write of a revision row; see `writeRevision`. */
export interface RevisionWrite extends RevisionTransitionOptions {
  /** The new status; absent, the status stays and `from` lists where the row must be. */
  to?: RevisionStatus;
  /** Takes the deployment's in-flight slot: started_at, and the enqueue deadline starts. */
  start?: boolean;
}

/**
 * THE write of a revision row (docs/architecture.md, Rules): every change of status, attempt,
 * deadline or anything else of a revision is this one conditional UPDATE, whose WHERE allows
 * only the statuses the transition table lists as sources of `to` (narrowed by `from`), and
 * only the expected `attempt`. Zero rows means someone else moved the revision first (or it is
 * terminal): the caller gets null and must not act as if it had won. Attempts and deadlines
 * are never set by hand: they follow from the phase entered (`PHASES`), a retry, or a start.
 * A status change (or retry) appends to `revision_events` in the same statement. The message
 * (often a tool's or an app's own words) is made storable first: a NUL in it must not block
 * the change.
 */
export async function writeRevision(
  manager: EntityManager,
  revisionId: string,
  write: RevisionWrite,
  budgets?: PhaseBudgets,
): Promise<AppliedWrite | null> {
  return (await writeRevisions(manager, [revisionId], write, budgets))[0] ?? null;
}

/**
 * `writeRevision` of several revisions in one statement (the relay's hand-off of a batch):
 * each row is judged on its own; the result lists the rows written. Rows are locked in id
 * order, so two batch writers cannot deadlock each other.
 */
export async function writeRevisions(
  manager: EntityManager,
  revisionIds: readonly string[],
  write: RevisionWrite,
  budgets?: PhaseBudgets,
): Promise<AppliedWrite[]> {
  if (!revisionIds.length) return [];
  const { to } = write;
  let allowed: RevisionStatus[] = to ? revisionSourcesOf(to) : [...(write.from ?? [])];
  if (to && write.retry) allowed = [...allowed, to];
  if (to && write.from) allowed = allowed.filter((s) => write.from!.includes(s));
  if (!allowed.length) return [];

  const params: unknown[] = [revisionIds, allowed, write.attempt ?? null];
  const param = (value: unknown) => `$${params.push(value)}`;
  const sets: string[] = [];
  let toStatus = 'prev.status';
  if (to) {
    const message = write.message == null ? null : toStorableText(write.message);
    toStatus = `${param(to)}::text`;
    sets.push(`status = ${toStatus}`, `status_message = ${param(message)}`, 'status_changed_at = now()');
    const phase = workedPhaseOf(to);
    if (write.retry) {
      sets.push('attempt = r.attempt + 1');
    } else if (phase) {
      // Entering the phase restarts its attempts and its clock; moving within it keeps both.
      const within = `prev.status = ANY(${param(phase.statuses)}::text[])`;
      sets.push(`attempt = CASE WHEN ${within} THEN r.attempt ELSE 0 END`);
      sets.push(
        `deadline_at = CASE WHEN ${within} THEN r.deadline_at ELSE ${param(phaseDeadline(to, budgets))}::timestamptz END`,
      );
    } else if (isRevisionTerminal(to)) {
      sets.push('deadline_at = NULL');
    }
  }
  if (write.start) sets.push('started_at = now()', `deadline_at = ${param(startDeadline(budgets))}::timestamptz`);
  for (const [key, column] of Object.entries(COLUMN) as Array<[keyof typeof COLUMN, string]>) {
    if (write.set && key in write.set) sets.push(`${column} = ${param(write.set[key])}`);
  }
  if (write.set?.revisionConfig) {
    sets.push(
      `source_revision_config = r.source_revision_config || ${param(JSON.stringify(toStorableValue(write.set.revisionConfig)))}::jsonb`,
    );
  }
  if (!sets.length) return [];
  // A heartbeat alone is no change of the revision a reader would care about.
  if (to || write.start || Object.keys(write.set ?? {}).some((k) => k !== 'heartbeatAt'))
    sets.push('updated_at = now()');

  const rows = await queryRows<{
    id: string;
    deployment_id: string;
    from_status: RevisionStatus;
    attempt: number;
    source: string;
    artifact_ref: string | null;
    overdue: boolean;
  }>(
    manager,
    // The rows are locked by id alone, and their status judged after the lock: a row that
    // another transaction is changing right now (the relay handing it over, CREATING →
    // AWAITING_BUILD, while its job already reached a worker) is waited for and judged as that
    // transaction left it. Filtering on status in the locking read would judge the version
    // from before it and skip the row without waiting.
    `WITH prev AS (
       SELECT id, status, status_changed_at FROM revisions
        WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE
     ), upd AS (
       UPDATE revisions r SET ${sets.join(', ')}
         FROM prev
        WHERE r.id = prev.id AND prev.status = ANY($2::text[]) AND ($3::int IS NULL OR r.attempt = $3)
       RETURNING r.id, r.deployment_id, r.attempt, r.source, r.artifact_ref, r.status_message,
                 (r.deadline_at IS NOT NULL AND r.deadline_at < now()) AS overdue,
                 prev.status AS from_status, prev.status_changed_at AS prev_changed_at
     )${
       to
         ? `, ev AS (
       INSERT INTO revision_events (revision_id, deployment_id, from_status, to_status, message, time_in_status_ms)
       SELECT id, deployment_id, from_status, ${toStatus}, status_message,
               (extract(epoch FROM now() - prev_changed_at) * 1000)::bigint FROM upd
     )`
         : ''
     }
     SELECT id, deployment_id, from_status, attempt, source, artifact_ref, overdue FROM upd`,
    params,
  );
  return rows.map((row) => ({
    revisionId: row.id,
    deploymentId: row.deployment_id,
    from: row.from_status,
    to: to ?? row.from_status,
    attempt: row.attempt,
    source: row.source,
    artifactRef: row.artifact_ref,
    overdue: row.overdue,
  }));
}

/** A status change of a revision: `writeRevision` with a new status. */
export async function transitionRevision(
  manager: EntityManager,
  revisionId: string,
  to: RevisionStatus,
  options: RevisionTransitionOptions = {},
  budgets?: PhaseBudgets,
): Promise<AppliedTransition | null> {
  const applied = await writeRevision(manager, revisionId, { ...options, to }, budgets);
  return (
    applied && {
      revisionId: applied.revisionId,
      deploymentId: applied.deploymentId,
      from: applied.from,
      to,
      attempt: applied.attempt,
      source: applied.source,
      artifactRef: applied.artifactRef,
    }
  );
}
