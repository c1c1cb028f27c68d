import type { EntityManager } from 'typeorm';
import { queryRows, type Rider } from '../sql.js';
import { overridesOf, type QuotaOverrides } from './quota.repository.js';

/**
 * At most this many free slots are laid out at once: a quota raised to a million must not make
 * a create insert a million rows. Past a slice, the next create lays out the next one.
 */
export const SLOT_SLICE = 256;

/** What a create's slot claim found: a slot taken, and the workspace's quota overrides. */
export interface SlotClaim {
  claimed: boolean;
  overrides: QuotaOverrides;
}

/**
 * The workspace deployment quota as slots (migration 1764800000000): a deployment holds one slot
 * row of its workspace and the row goes with it (ON DELETE CASCADE, whatever deletes the
 * deployment: a teardown, a listener's report, the workspace). Free rows are laid out for one
 * quota (`workspaces.deployment_slots_for`): as many as the quota leaves room for, at most a
 * slice (SLOT_SLICE) at a time.
 *
 * A create claims a free row with `FOR UPDATE SKIP LOCKED`: creates of one workspace take
 * different rows and do not wait for each other. Only when no free row is left, or the quota in
 * force is no longer the one the rows were laid out for (an override changed, or the configured
 * default), does a create take the workspace lock and lay the rows out again — exactly: it
 * deletes every free row (waiting for creates holding one to commit or roll back), counts the
 * taken ones, and adds what the quota leaves room for (up to a slice).
 */
export class DeploymentSlotsRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * Claims a free slot for `deploymentId` (inserted by this transaction) when the free rows were
   * laid out for the quota in force, and reads the workspace's quota overrides (a create checks
   * its scale against them): as a rider, so the create's last statement carries it (one round
   * trip for both). `claimed` false: `layOut` decides.
   */
  claimRider(workspaceId: string, deploymentId: string, defaultQuota: number): Rider<SlotClaim> {
    return {
      sql: (offset) => {
        const [ws, dep, quota] = [offset + 1, offset + 2, offset + 3].map((n) => `$${n}`);
        return {
          ctes: `slot_claimed AS (
             UPDATE deployment_slots SET deployment_id = ${dep}::uuid
              WHERE id = (SELECT s.id FROM deployment_slots s
                           WHERE s.workspace_id = ${ws}::uuid AND s.deployment_id IS NULL
                             AND (SELECT deployment_slots_for FROM workspaces WHERE id = ${ws}::uuid)
                                 = coalesce((SELECT deployments FROM workspace_quotas WHERE workspace_id = ${ws}::uuid), ${quota}::int)
                           LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id)`,
          value: `jsonb_build_object('claimed', EXISTS (SELECT 1 FROM slot_claimed),
                    'overrides', (SELECT to_jsonb(q) FROM workspace_quotas q WHERE q.workspace_id = ${ws}::uuid))`,
          params: [workspaceId, deploymentId, defaultQuota],
        };
      },
      read: (value) => {
        const { claimed, overrides } = (value ?? {}) as { claimed?: boolean; overrides?: Record<string, unknown> | null };
        return { claimed: claimed === true, overrides: overridesOf(overrides ?? undefined) };
      },
    };
  }

  /**
   * Under the workspace lock (`QuotaRepository.lockWorkspace`, taken by the caller): a slot for
   * `deploymentId` if `quota` leaves room, with the free rows laid out again for `quota`. False:
   * the workspace has `quota` deployments or more.
   */
  async layOut(workspaceId: string, deploymentId: string, quota: number): Promise<boolean> {
    // Rows laid out meanwhile by another create (it held the lock before this one): claim one.
    const [retry] = await queryRows<{ id: string }>(
      this.manager,
      `UPDATE deployment_slots SET deployment_id = $2
        WHERE id = (SELECT id FROM deployment_slots s WHERE s.workspace_id = $1 AND s.deployment_id IS NULL
                      AND (SELECT deployment_slots_for FROM workspaces WHERE id = $1) = $3::int
                    LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [workspaceId, deploymentId, quota],
    );
    if (retry) return true;
    // Waits for the creates holding a free row; each row is then either taken or deleted.
    await this.manager.query(`DELETE FROM deployment_slots WHERE workspace_id = $1 AND deployment_id IS NULL`, [workspaceId]);
    // A statement of its own: its snapshot sees every claim the delete waited for.
    const [laid] = await queryRows<{ room: number }>(
      this.manager,
      `WITH room AS (
         SELECT $3::int - count(*)::int AS n FROM deployment_slots WHERE workspace_id = $1
       ), mark AS (
         UPDATE workspaces SET deployment_slots_for = $3 WHERE id = $1
       ), rows AS (
         INSERT INTO deployment_slots (workspace_id, deployment_id)
         SELECT $1, CASE WHEN i = 1 THEN $2::uuid END FROM room, generate_series(1, least(room.n, $4::int)) i
       )
       SELECT n AS room FROM room`,
      [workspaceId, deploymentId, quota, SLOT_SLICE],
    );
    return laid!.room > 0;
  }
}
