import type { JobContext } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import type { PhaseGuard } from '@slipway/pipeline';

/**
 * Where a deployment's revisions run, and who moves them there (docs/architecture.md,
 * Runtimes). The deployer's processors own the job's bookkeeping (staleness, the phase guard,
 * provisioning first); the placement does the rest. Two exist:
 * - the embedded runtime (`EmbeddedPlacement`): this machine's sandboxed processes and
 *   containers, driven by the deployer that owns them (a `RuntimeDriver`);
 * - a listener's cluster (`ListenerPlacement`): the revision is published in the listener's
 *   desired state and its agent reports how it went; nothing runs here.
 */
export interface Placement {
  readonly kind: 'embedded' | 'listener';
  /**
   * True when `rollout` only records the begin (a listener's: its agent does the work), at once:
   * its job then needs no heartbeat, as the reconciler counts a job's quiet from when it went
   * active. A heartbeat is a write with a commit to flush, for every rollout.
   */
  readonly beginsAtOnce: boolean;
  /** Gives a deployment its data stores before `database` is recorded for it. */
  provision(deploymentId: string, database: string, log: Logger): Promise<void>;
  /** Rolls out a revision in AWAITING_DEPLOY; `guard` runs the phase's heartbeat and deadline. */
  rollout(revisionId: string, guard: PhaseGuard, on: JobContext): Promise<void>;
  /** Takes down a deployment in AWAITING_DELETE; whoever finishes it removes the row. */
  teardown(deployment: { id: string; name: string }, on: JobContext): Promise<void>;
}

export interface Placements {
  embedded: Placement;
  listener: Placement;
}

/**
 * A deployment with a listener runs in that listener's cluster (only `external_container` may have one); every other on
 * the embedded runtime.
 */
export const placementOf = (placements: Placements, deployment: { listenerId: string | null }): Placement =>
  deployment.listenerId ? placements.listener : placements.embedded;
