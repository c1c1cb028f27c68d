import type { Config } from '@slipway/config';
import { dropDatabaseIfExists, queryRows, type DataSource } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';

/**
 * `teardown.deployment` for a deployment in AWAITING_DELETE. A listener's deployment is torn
 * down by its agent (desired state says `delete`; the agent's report removes the row). A
 * cloud-hosted one: drop its database, then remove the row — the deployment is gone (404), its
 * tracing project stays. Every step is idempotent, so a retried teardown is safe.
 */
export function teardownDeploymentProcessor(config: Readonly<Config>, dataSource: DataSource): JobHandler<'teardown.deployment'> {
  return async ({ deploymentId }, { log }) => {
    const [d] = await queryRows<{ status: string; name: string; listener_id: string | null }>(
      dataSource.manager,
      `SELECT status, name, listener_id FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    if (!d || d.status !== 'AWAITING_DELETE') return;
    if (d.listener_id) {
      log.info({ listenerId: d.listener_id }, 'teardown published to the listener; waiting for its report');
      return;
    }
    await dropDatabaseIfExists(config.databaseUrl, deploymentDatabaseName(d.name, deploymentId));
    await dataSource.query(`DELETE FROM deployments WHERE id = $1 AND status = 'AWAITING_DELETE'`, [deploymentId]);
    log.info('deployment torn down');
  };
}
