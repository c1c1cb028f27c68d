/**
 * Status machines of revisions and deployments (docs/api.md, Statuses). Each is a transition table
 * `status → statuses it may move to` plus a terminal set; every status change in the product
 * goes through one conditional UPDATE that allows exactly the `from` statuses this table lists.
 */

export const REVISION_STATUSES = [
  /** Row written and started; its job is not yet handed to the queues (the outbox holds it). */
  'CREATING',
  /** Waiting: another revision of the same deployment is in flight. */
  'QUEUED',
  /** Build job enqueued. */
  'AWAITING_BUILD',
  /** The builder is working (fetch, install, build). */
  'BUILDING',
  /** Artifact ready (or no build needed); rollout job enqueued. */
  'AWAITING_DEPLOY',
  /** The deployer (or a listener agent) is rolling it out and waiting for health. */
  'DEPLOYING',
  /** Healthy and serving; stays DEPLOYED after a newer revision replaces it. */
  'DEPLOYED',
  /** Could not be set up (e.g. enqueue impossible past its deadline). */
  'CREATE_FAILED',
  /** Build failed or timed out. */
  'BUILD_FAILED',
  /** Rollout failed or did not become healthy in time; the previous active revision keeps serving. */
  'DEPLOY_FAILED',
  /** Superseded by a newer revision before it started. */
  'SKIPPED',
  /** Stopped by an interruption request or by deletion of the deployment. */
  'INTERRUPTED',
  /** The system lost track (e.g. a listener stopped reporting); the reconciler moves it on. */
  'UNKNOWN',
] as const;

export type RevisionStatus = (typeof REVISION_STATUSES)[number];

export const REVISION_TERMINAL: ReadonlySet<RevisionStatus> = new Set([
  'DEPLOYED',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'SKIPPED',
  'INTERRUPTED',
]);

/** Every way out of a non-terminal status; interruption is allowed from all of them. */
export const REVISION_TRANSITIONS: Readonly<Record<RevisionStatus, readonly RevisionStatus[]>> = {
  CREATING: ['QUEUED', 'AWAITING_BUILD', 'AWAITING_DEPLOY', 'CREATE_FAILED', 'INTERRUPTED'],
  QUEUED: ['AWAITING_BUILD', 'AWAITING_DEPLOY', 'SKIPPED', 'CREATE_FAILED', 'INTERRUPTED'],
  AWAITING_BUILD: ['BUILDING', 'BUILD_FAILED', 'INTERRUPTED'],
  // BUILDING → AWAITING_BUILD: the reconciler re-enqueues a build whose worker died.
  BUILDING: ['AWAITING_DEPLOY', 'AWAITING_BUILD', 'BUILD_FAILED', 'INTERRUPTED'],
  AWAITING_DEPLOY: ['DEPLOYING', 'DEPLOY_FAILED', 'INTERRUPTED'],
  // DEPLOYING → AWAITING_DEPLOY: the reconciler re-enqueues a rollout whose worker died.
  DEPLOYING: ['DEPLOYED', 'AWAITING_DEPLOY', 'DEPLOY_FAILED', 'UNKNOWN', 'INTERRUPTED'],
  UNKNOWN: ['DEPLOYED', 'DEPLOYING', 'DEPLOY_FAILED', 'INTERRUPTED'],
  DEPLOYED: [],
  CREATE_FAILED: [],
  BUILD_FAILED: [],
  DEPLOY_FAILED: [],
  SKIPPED: [],
  INTERRUPTED: [],
};

/** Statuses that hold the deployment's single in-flight slot once the revision has started. */
export const REVISION_ACTIVE_PHASES: readonly RevisionStatus[] = [
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'UNKNOWN',
];

export const DEPLOYMENT_STATUSES = [
  /** New deployment; its database is being provisioned. */
  'AWAITING_DATABASE',
  /** Database ready; revisions can serve. */
  'READY',
  /** The idle reaper found no activity for the configured period. */
  'UNUSED',
  /** DELETE accepted; teardown of compute and database in progress. */
  'AWAITING_DELETE',
  /** Its listener has not reported within the configured period. */
  'UNKNOWN',
] as const;

export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** A deployment row is deleted when teardown ends, so no deployment status is terminal. */
export const DEPLOYMENT_TRANSITIONS: Readonly<Record<DeploymentStatus, readonly DeploymentStatus[]>> = {
  AWAITING_DATABASE: ['READY', 'AWAITING_DELETE', 'UNKNOWN'],
  READY: ['UNUSED', 'AWAITING_DELETE', 'UNKNOWN'],
  UNUSED: ['READY', 'AWAITING_DELETE', 'UNKNOWN'],
  UNKNOWN: ['READY', 'AWAITING_DATABASE', 'AWAITING_DELETE'],
  AWAITING_DELETE: [],
};

export function isRevisionTerminal(status: RevisionStatus): boolean {
  return REVISION_TERMINAL.has(status);
}

/** The statuses a revision may be in to move to `to`: the `WHERE status = ANY(...)` of the UPDATE. */
export function revisionSourcesOf(to: RevisionStatus): RevisionStatus[] {
  return REVISION_STATUSES.filter((from) => REVISION_TRANSITIONS[from].includes(to));
}

export function deploymentSourcesOf(to: DeploymentStatus): DeploymentStatus[] {
  return DEPLOYMENT_STATUSES.filter((from) => DEPLOYMENT_TRANSITIONS[from].includes(to));
}

/** Statuses reachable from `start` (for the reachability test and for docs). */
export function reachable<S extends string>(table: Readonly<Record<S, readonly S[]>>, start: S): Set<S> {
  const seen = new Set<S>([start]);
  const queue = [start];
  while (queue.length) {
    for (const next of table[queue.shift()!]) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return seen;
}
