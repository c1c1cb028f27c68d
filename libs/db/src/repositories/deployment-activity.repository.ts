import type { DataSource, EntityManager } from 'typeorm';
import type { DeploymentStatus } from '@slipway/domain';
import { queryRows } from '../sql.js';
import { DeploymentRepository } from './deployment.repository.js';
import { transitionDeployment } from './deployment-status.js';

/** A deployment's activity is written at most this often (per process, and across processes by the UPDATE). */
export const ACTIVITY_INTERVAL_MS = 60_000;
/** Deployments whose last write a process remembers; past it the oldest are forgotten (one extra UPDATE each, no more). */
const MAX_REMEMBERED = 50_000;

/**
 * `deployments.last_activity_at`: when the deployment was last used or changed. Creating,
 * patching or redeploying it sets it (`DeploymentRepository`'s writes that revision.repository.ts,
 * revision-flow.ts and the api's PATCH call), and so does real activity through
 * `DeploymentActivity.record` (`DeploymentRepository.touchActivity`), so
 * the column is max(last redeploy, last activity) and the idle reaper reads only it.
 *
 * No index covers `last_activity_at`, on purpose: an unindexed column keeps every activity write
 * a HOT update, and the reaper's scan runs once per reconcile pass, not per request.
 */
export class DeploymentActivityRepository {
  constructor(private readonly manager: EntityManager) {}

  /** READY deployments without activity for `idleAfterMs` (candidates; `markUnused` decides). */
  async idle(idleAfterMs: number, limit = 1000): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM deployments WHERE status = 'READY' AND last_activity_at < now() - $1 * interval '1 millisecond' LIMIT $2`,
      [idleAfterMs, limit],
    );
    return rows.map((r) => r.id);
  }

  /**
   * READY → UNUSED when the deployment is still idle. Run in a transaction: the row is locked
   * while idleness is re-checked, so activity recorded after `idle` listed it (its UPDATE waits
   * for the lock, then sees UNUSED and brings it back) can never be lost under an UNUSED status.
   */
  async markUnused(deploymentId: string, idleAfterMs: number): Promise<boolean> {
    const still = await queryRows(
      this.manager,
      `SELECT 1 FROM deployments
        WHERE id = $1 AND status = 'READY' AND last_activity_at < now() - $2 * interval '1 millisecond'
          FOR UPDATE`,
      [deploymentId, idleAfterMs],
    );
    if (!still.length) return false;
    return (await transitionDeployment(this.manager, deploymentId, 'UNUSED', ['READY'])) !== null;
  }
}

/** What one `record` did (for tests and logs). */
export type ActivityRecord = 'throttled' | 'unchanged' | 'recorded' | 'revived';

/**
 * Real activity of a deployment: a request its serving URL admitted, an agent-server run its
 * instances counted, and (with trace ingest) a trace. Each calls `record(deploymentId)`; it is
 * cheap enough for every request: a process writes a deployment at most once per
 * ACTIVITY_INTERVAL_MS (remembered here, no statement in between), with one conditional UPDATE
 * that also skips the write when another process wrote within the interval. An `UNUSED`
 * deployment goes back to `READY` through the deployment status transition.
 *
 * Called from: the deployer's serving proxies (services/deployer/src/process-driver/traffic.ts,
 * admitted requests) and its run-count reads (process-driver.ts); trace ingest (`recordAll`, the
 * api's `/api/v1` and the deployer's trace fronts).
 */
export class DeploymentActivity {
  private readonly written = new Map<string, number>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly intervalMs = ACTIVITY_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records activity of the deployment now (throttled); rejects only when the database does. */
  async record(deploymentId: string): Promise<ActivityRecord> {
    const at = this.now();
    const last = this.written.get(deploymentId);
    if (last !== undefined && at - last < this.intervalMs) return 'throttled';
    // Taken before the statement, and kept when it fails: concurrent requests and a database
    // outage both cost one statement per interval, never one per request.
    this.remember(deploymentId, at);
    const status = await new DeploymentRepository(this.dataSource.manager).touchActivity(deploymentId, this.intervalMs);
    if (status !== 'UNUSED') return status ? 'recorded' : 'unchanged';
    const from = await transitionDeployment(this.dataSource.manager, deploymentId, 'READY', ['UNUSED']);
    return from ? 'revived' : 'recorded';
  }

  /**
   * Records each deployment's activity after work that is already done (runs written): a failure
   * goes to `onError`, never to the caller, whose work stands.
   */
  async recordAll(
    deploymentIds: readonly string[],
    onError: (err: unknown, deploymentId: string) => void,
  ): Promise<void> {
    await Promise.all(deploymentIds.map((id) => this.record(id).catch((err) => onError(err, id))));
  }

  /** Forgets what this process wrote (tests). */
  forget(): void {
    this.written.clear();
  }

  private remember(deploymentId: string, at: number): void {
    this.written.delete(deploymentId); // re-inserted last: the Map's order is oldest write first
    this.written.set(deploymentId, at);
    if (this.written.size <= MAX_REMEMBERED) return;
    for (const [id, when] of this.written) {
      if (this.written.size <= MAX_REMEMBERED && at - when < this.intervalMs) break;
      this.written.delete(id);
    }
  }
}
