import type { EntityManager } from 'typeorm';
import { deploymentSourcesOf, type DeploymentStatus } from '@slipway/domain';
import { queryRows } from '../sql.js';

/**
 * THE deployment status change: every write of `deployments.status` after its insert is this one
 * conditional UPDATE (locking the rows, in id order, moving only from a status that
 * `deploymentSourcesOf(to)` allows, narrowed by `from`), for one deployment (`transitionDeployment`)
 * or several (`readyBegunListenerDeployments`). `which` picks the rows locked and moved from
 * `$1` (ids), `$2` is the status to, `$3` the statuses from. The `deployments_status_event`
 * trigger records each move's `deployment.status_changed` event. Every other write of the row is
 * a named method of `DeploymentRepository` (deployment.repository.ts);
 * test/infra/deployments-writes.test.ts allows SQL writes of `deployments` only in these two files.
 */
async function moveStatus(
  manager: EntityManager,
  which: string,
  params: [ids: readonly string[], to: DeploymentStatus, from: readonly DeploymentStatus[]],
): Promise<Array<{ id: string; from_status: DeploymentStatus }>> {
  return queryRows<{ id: string; from_status: DeploymentStatus }>(
    manager,
    `WITH prev AS (SELECT id, status FROM deployments WHERE ${which} ORDER BY id FOR UPDATE)
     UPDATE deployments d SET status = $2, status_changed_at = now(), updated_at = now()
       FROM prev WHERE d.id = prev.id AND prev.status = ANY($3::text[])
     RETURNING d.id, prev.status AS from_status`,
    params,
  );
}

/**
 * One deployment's status change; returns the status it moved from, null when it did not move.
 */
export async function transitionDeployment(
  manager: EntityManager,
  deploymentId: string,
  to: DeploymentStatus,
  from?: readonly DeploymentStatus[],
): Promise<DeploymentStatus | null> {
  let allowed = deploymentSourcesOf(to);
  if (from) allowed = allowed.filter((s) => from.includes(s));
  const rows = await moveStatus(manager, 'id = ANY($1::uuid[])', [[deploymentId], to, allowed]);
  return rows[0]?.from_status ?? null;
}

/**
 * A listener's deployment is created AWAITING_DATABASE with its database name recorded (all its
 * provisioning: its cluster runs its stores) and no `provision.deployment` job; it becomes READY
 * as its first rollout begins. This is that move for the deployments of the rollouts the deployer
 * begins together (`revisionIds`, still at `AWAITING_DEPLOY`), in one statement, in the begin's
 * transaction and before it: AWAITING_DATABASE → READY, only for a deployment whose name is
 * recorded (one created before this, still waiting for its `provision.deployment`, waits for
 * it). It locks only the deployments that move, in id order, before their revisions, as a delete
 * or a deadline does. Returns the ids of the deployments moved.
 */
export async function readyBegunListenerDeployments(
  manager: EntityManager,
  revisionIds: readonly string[],
): Promise<string[]> {
  if (!revisionIds.length) return [];
  const rows = await moveStatus(
    manager,
    `status = 'AWAITING_DATABASE' AND database_name IS NOT NULL AND listener_id IS NOT NULL
       AND id IN (SELECT deployment_id FROM revisions WHERE id = ANY($1::uuid[]) AND status = 'AWAITING_DEPLOY')`,
    [revisionIds, 'READY', ['AWAITING_DATABASE']],
  );
  return rows.map((r) => r.id);
}
