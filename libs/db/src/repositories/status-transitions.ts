import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';
import {
  deploymentSourcesOf,
  revisionSourcesOf,
  toStorableText,
  toStorableValue,
  type DeploymentStatus,
  type RevisionStatus,
} from '@slipway/domain';

/** Columns a transition may set together with the status, in the same UPDATE. */
export interface RevisionTransitionSet {
  deadlineAt?: Date | null;
  heartbeatAt?: Date | null;
  startedAt?: Date | null;
  imageUri?: string | null;
  artifactRef?: string | null;
  /** Merged into source_revision_config (e.g. the resolved repo_commit_sha). */
  revisionConfig?: Record<string, unknown>;
  incrementAttempt?: boolean;
}

export interface RevisionTransitionOptions {
  message?: string | null;
  /** Narrows the allowed `from` statuses (intersected with the transition table). */
  from?: readonly RevisionStatus[];
  set?: RevisionTransitionSet;
}

export interface AppliedTransition {
  revisionId: string;
  deploymentId: string;
  from: RevisionStatus;
  to: RevisionStatus;
  attempt: number;
}

const COLUMN: Record<Exclude<keyof RevisionTransitionSet, 'revisionConfig' | 'incrementAttempt'>, string> = {
  deadlineAt: 'deadline_at',
  heartbeatAt: 'heartbeat_at',
  startedAt: 'started_at',
  imageUri: 'image_uri',
  artifactRef: 'artifact_ref',
};

/**
 * THE revision status change (docs/architecture.md, Rules): one conditional UPDATE whose WHERE allows only
 * the statuses the transition table lists as sources of `to`. Zero rows means someone else
 * moved the revision first (or it is terminal): the caller gets null and must not act as if it
 * had won. The same statement appends the change to `revision_events`. The message (often a
 * tool's or an app's own words) is made storable first: a NUL in it must not block the change.
 */
export async function transitionRevision(
  manager: EntityManager,
  revisionId: string,
  to: RevisionStatus,
  options: RevisionTransitionOptions = {},
): Promise<AppliedTransition | null> {
  let allowed = revisionSourcesOf(to);
  if (options.from) allowed = allowed.filter((s) => options.from!.includes(s));
  if (!allowed.length) return null;

  const message = options.message == null ? null : toStorableText(options.message);
  const params: unknown[] = [revisionId, to, message, allowed];
  const sets = ['status = $2', 'status_message = $3', 'status_changed_at = now()', 'updated_at = now()'];
  for (const [key, column] of Object.entries(COLUMN) as Array<[keyof typeof COLUMN, string]>) {
    if (options.set && key in options.set) {
      params.push(options.set[key]);
      sets.push(`${column} = $${params.length}`);
    }
  }
  if (options.set?.revisionConfig) {
    params.push(JSON.stringify(toStorableValue(options.set.revisionConfig)));
    sets.push(`source_revision_config = r.source_revision_config || $${params.length}::jsonb`);
  }
  if (options.set?.incrementAttempt) sets.push('attempt = r.attempt + 1');

  const rows = await queryRows<{ id: string; deployment_id: string; from_status: RevisionStatus; attempt: number }>(
    manager,
    `WITH prev AS (
       SELECT id, status, status_changed_at FROM revisions WHERE id = $1 FOR UPDATE
     ), upd AS (
       UPDATE revisions r SET ${sets.join(', ')}
         FROM prev
        WHERE r.id = prev.id AND prev.status = ANY($4::text[])
       RETURNING r.id, r.deployment_id, r.attempt, prev.status AS from_status, prev.status_changed_at AS prev_changed_at
     ), ev AS (
       INSERT INTO revision_events (revision_id, deployment_id, from_status, to_status, message, time_in_status_ms)
       SELECT id, deployment_id, from_status, $2, $3, (extract(epoch FROM now() - prev_changed_at) * 1000)::bigint FROM upd
     )
     SELECT id, deployment_id, from_status, attempt FROM upd`,
    params,
  );
  const row = rows[0];
  return row ? { revisionId: row.id, deploymentId: row.deployment_id, from: row.from_status, to, attempt: row.attempt } : null;
}

/** The deployment status change: the same conditional pattern over the deployment table. */
export async function transitionDeployment(
  manager: EntityManager,
  deploymentId: string,
  to: DeploymentStatus,
  from?: readonly DeploymentStatus[],
): Promise<DeploymentStatus | null> {
  let allowed = deploymentSourcesOf(to);
  if (from) allowed = allowed.filter((s) => from.includes(s));
  const rows = await queryRows<{ from_status: DeploymentStatus }>(
    manager,
    `WITH prev AS (SELECT id, status FROM deployments WHERE id = $1 FOR UPDATE)
     UPDATE deployments d SET status = $2, status_changed_at = now(), updated_at = now()
       FROM prev WHERE d.id = prev.id AND prev.status = ANY($3::text[])
     RETURNING prev.status AS from_status`,
    [deploymentId, to, allowed],
  );
  return rows[0]?.from_status ?? null;
}
