import type { EntityManager } from 'typeorm';
import { queryRows, type Rider } from '../sql.js';
import { overridesOf, type QuotaOverrides } from './quota.repository.js';

/**
 * At most this many free slots are laid out at once: a quota raised to a million must not make
 * a create insert a million rows. Past a slice, the next create lays out the next one.
 */
export const SLOT_SLICE = 256;

/**
 * A create that sees fewer free rows than this left asks for the next slice to be added after it
 * commits (`topUp`), so creates arriving meanwhile do not find the slice used up.
 */
export const SLOT_LOW_WATER = 64;

/** What a create's slot claim found: a slot taken, the workspace's quota overrides, and whether free rows run low. */
export interface SlotClaim {
  claimed: boolean;
  overrides: QuotaOverrides;
  /** Fewer than SLOT_LOW_WATER free rows were left (the claimed one included). */
  low: boolean;
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
 * default), does the create roll back, lay the rows out again in a short transaction of its
 * own under the workspace lock (the api's `DeploymentSlots` says why), and run
 * again. Laying out is exact: it deletes every free row (waiting for creates holding one to
 * commit or roll back), counts the taken ones, and adds what the quota leaves room for (up to a
 * slice).
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
                    'overrides', (SELECT to_jsonb(q) FROM workspace_quotas q WHERE q.workspace_id = ${ws}::uuid),
                    'free', (SELECT count(*) FROM (SELECT 1 FROM deployment_slots f
                              WHERE f.workspace_id = ${ws}::uuid AND f.deployment_id IS NULL LIMIT ${SLOT_LOW_WATER}) f))`,
          params: [workspaceId, deploymentId, defaultQuota],
        };
      },
      read: (value) => {
        const { claimed, overrides, free } = (value ?? {}) as {
          claimed?: boolean;
          overrides?: Record<string, unknown> | null;
          free?: number;
        };
        return {
          claimed: claimed === true,
          overrides: overridesOf(overrides ?? undefined),
          low: (free ?? 0) < SLOT_LOW_WATER,
        };
      },
    };
  }

  /**
   * Under the workspace lock: when the rows are laid out for `quota`, adds free rows up to a
   * slice in all, within what `quota` leaves room for counting every row, free or taken. It waits
   * for nothing: what concurrent claims do changes no count. The rows added, or null when they
   * are laid out for another quota, or none is free and no room is left.
   */
  async topUp(workspaceId: string, quota: number): Promise<number | null> {
    const [row] = await queryRows<{ added: number; usable: boolean | null }>(
      this.manager,
      `WITH counts AS (
         SELECT count(*)::int AS total, count(*) FILTER (WHERE deployment_id IS NULL)::int AS free
           FROM deployment_slots WHERE workspace_id = $1
       ), mark AS (
         SELECT deployment_slots_for = $2::int AS same FROM workspaces WHERE id = $1
       ), added AS (
         INSERT INTO deployment_slots (workspace_id)
         SELECT $1 FROM counts, mark, generate_series(1, least($2::int - counts.total, $3::int - counts.free)) WHERE mark.same
         RETURNING id
       )
       SELECT (SELECT count(*)::int FROM added) AS added, mark.same AND counts.free + (SELECT count(*) FROM added) > 0 AS usable
         FROM counts, mark`,
      [workspaceId, quota, SLOT_SLICE],
    );
    return row?.usable ? row.added : null;
  }

  /**
   * Under the workspace lock (`QuotaRepository.lockWorkspace`, taken by the caller's transaction
   * before anything else): free rows laid out for `quota`, at most a slice. When the rows are
   * laid out for `quota` already, the next slice is added to what is left, up to what the quota
   * leaves room for counting every row, free or taken (no wait: what concurrent claims do changes
   * no count). Otherwise (a changed quota), or when that leaves no room, exactly: every free row
   * is deleted (waiting for creates holding one to commit or roll back), the taken ones counted,
   * and what `quota` leaves room for laid out. False: no room, the workspace has `quota`
   * deployments or more.
   */
  async layOut(workspaceId: string, quota: number): Promise<boolean> {
    if ((await this.topUp(workspaceId, quota)) !== null) return true;
    // Waits for the creates holding a free row; each row is then either taken or deleted.
    await this.manager.query(`DELETE FROM deployment_slots WHERE workspace_id = $1 AND deployment_id IS NULL`, [
      workspaceId,
    ]);
    // A statement of its own: its snapshot sees every claim the delete waited for.
    const [laid] = await queryRows<{ room: number }>(
      this.manager,
      `WITH room AS (
         SELECT $2::int - count(*)::int AS n FROM deployment_slots WHERE workspace_id = $1
       ), mark AS (
         UPDATE workspaces SET deployment_slots_for = $2 WHERE id = $1
       ), rows AS (
         INSERT INTO deployment_slots (workspace_id) SELECT $1 FROM room, generate_series(1, least(room.n, $3::int))
       )
       SELECT n AS room FROM room`,
      [workspaceId, quota, SLOT_SLICE],
    );
    return laid!.room > 0;
  }
}
