import type { EntityManager } from 'typeorm';
import { deploymentSourcesOf, type DeploymentStatus } from '@slipway/domain';
import { queryRows } from '../sql.js';

/**
 * THE deployment status change: every write of `deployments.status` after its insert is this one
 * conditional UPDATE (locking the row, moving only from a status that `deploymentSourcesOf(to)`
 * allows, narrowed by `from`); it returns the status it moved from, null when it did not move.
 * Every other write of the row is a named method of `DeploymentRepository`
 * (deployment.repository.ts); test/infra/deployments-writes.test.ts allows SQL writes of
 * `deployments` only in these two files.
 */
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
