import { queryRows, transitionDeployment, type DataSource } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import type { DeploymentDataAccess } from './provisioning/data-access.js';

interface ProvisionRow {
  status: string;
  name: string;
  listener_id: string | null;
}

/**
 * Gives a deployment its own database (AWAITING_DATABASE → READY). Cloud-hosted deployments
 * get a database on the control plane's Postgres server, owned by a login role of their own, and
 * a Redis ACL user of their own (DeploymentDataAccess); a listener's deployments get theirs
 * in their own cluster (a StatefulSet in the rendered desired state), so only the name is
 * recorded here. Idempotent: creating an existing database is a no-op, the transition is
 * conditional.
 */
export async function provisionDeployment(dataAccess: DeploymentDataAccess, dataSource: DataSource, deploymentId: string, log: Logger): Promise<boolean> {
  const [d] = await queryRows<ProvisionRow>(dataSource.manager, `SELECT status, name, listener_id FROM deployments WHERE id = $1`, [deploymentId]);
  if (!d || d.status !== 'AWAITING_DATABASE') return false;
  const database = deploymentDatabaseName(d.name, deploymentId);
  if (!d.listener_id) {
    await dataAccess.provision(deploymentId, database);
    log.info({ database }, 'deployment database, role and Redis user ready');
  }
  return dataSource.transaction(async (m) => {
    await m.query(`UPDATE deployments SET database_name = $2 WHERE id = $1 AND status = 'AWAITING_DATABASE'`, [deploymentId, database]);
    return (await transitionDeployment(m, deploymentId, 'READY', ['AWAITING_DATABASE'])) !== null;
  });
}

export function provisionDeploymentProcessor(dataSource: DataSource, dataAccess: DeploymentDataAccess): JobHandler<'provision.deployment'> {
  return async ({ deploymentId }, { log }) => {
    await provisionDeployment(dataAccess, dataSource, deploymentId, log);
  };
}
