import type { Config } from '@slipway/config';
import { deploymentDatabasePassword } from '@slipway/crypto';
import { provisionDeploymentDatabase, queryRows, transitionDeployment, type DataSource } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';

interface ProvisionRow {
  status: string;
  name: string;
  listener_id: string | null;
}

/**
 * Gives a deployment its own database (AWAITING_DATABASE → READY). Cloud-hosted deployments
 * get a database on the control plane's Postgres server, owned by a login role of their own; a listener's deployments get theirs
 * in their own cluster (a StatefulSet in the rendered desired state), so only the name is
 * recorded here. Idempotent: creating an existing database is a no-op, the transition is
 * conditional.
 */
export async function provisionDeployment(config: Readonly<Config>, dataSource: DataSource, deploymentId: string, log: Logger): Promise<boolean> {
  const [d] = await queryRows<ProvisionRow>(dataSource.manager, `SELECT status, name, listener_id FROM deployments WHERE id = $1`, [deploymentId]);
  if (!d || d.status !== 'AWAITING_DATABASE') return false;
  const database = deploymentDatabaseName(d.name, deploymentId);
  if (!d.listener_id) {
    await provisionDeploymentDatabase(config.databaseUrl, database, deploymentDatabasePassword(config.secretsKey.key, deploymentId));
    log.info({ database }, 'deployment database and role ready');
  }
  return dataSource.transaction(async (m) => {
    await m.query(`UPDATE deployments SET database_name = $2 WHERE id = $1 AND status = 'AWAITING_DATABASE'`, [deploymentId, database]);
    return (await transitionDeployment(m, deploymentId, 'READY', ['AWAITING_DATABASE'])) !== null;
  });
}

export function provisionDeploymentProcessor(config: Readonly<Config>, dataSource: DataSource): JobHandler<'provision.deployment'> {
  return async ({ deploymentId }, { log }) => {
    await provisionDeployment(config, dataSource, deploymentId, log);
  };
}
