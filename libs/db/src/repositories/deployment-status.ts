import type { EntityManager } from 'typeorm';
import { deploymentSourcesOf, type DeploymentStatus } from '@slipway/domain';
import { queryRows } from '../sql.js';

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
