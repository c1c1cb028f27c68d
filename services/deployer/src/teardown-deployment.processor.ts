import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { dropDeploymentDatabase, queryRows, type DataSource } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';
import { RevisionReads } from '@slipway/pipeline';
import type { RuntimeDriver } from '@slipway/runtime';
import { parkUntilOwner } from './park.js';
import type { DeploymentDataAccess } from './provisioning/data-access.js';

/**
 * `teardown.deployment` for a deployment in AWAITING_DELETE. A listener's deployment is torn
 * down by its agent (desired state says `delete`; the agent's report removes the row). A
 * cloud-hosted one: stop its serving proxy and its instances (on the deployer that owns the
 * process runtime; elsewhere the job waits for it), close its data-access fronts and drop its
 * Redis user, drop its database, then remove the row —
 * the deployment is gone (404), its tracing project stays. Every step is idempotent, so a
 * retried teardown is safe.
 */
export function teardownDeploymentProcessor(
  config: Readonly<Config>,
  dataSource: DataSource,
  driver: RuntimeDriver,
  dataAccess: DeploymentDataAccess,
): JobHandler<'teardown.deployment'> {
  return async ({ deploymentId }, { job, log }) => {
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
    if (!driver.isOwner) await parkUntilOwner(job);
    // Processes first: they hold connections to the database about to be dropped.
    await driver.stop({ deploymentId });
    await dataAccess.drop(deploymentId);
    await dropDeploymentDatabase(config.databaseUrl, deploymentDatabaseName(d.name, deploymentId));
    await removeFiles(config, dataSource, deploymentId);
    await dataSource.query(`DELETE FROM deployments WHERE id = $1 AND status = 'AWAITING_DELETE'`, [deploymentId]);
    log.info('deployment torn down');
  };
}

/**
 * The deployment's files under the data dir: its uploaded tarballs, its revisions' built
 * artifacts, its builds' npm cache (`cache/npm/<deployment>`, see the builder's buildPaths) and
 * installed dependencies (`cache/deps/<deployment>`, the builder's DependencyCache).
 * Read from the rows before they go (revisions cascade with the deployment).
 */
async function removeFiles(config: Readonly<Config>, dataSource: DataSource, deploymentId: string): Promise<void> {
  const revisions = await new RevisionReads(dataSource.manager).idsOfDeployment(deploymentId);
  const dirs = [
    path.join(config.dataDir, 'uploads', deploymentId),
    path.join(config.dataDir, 'cache', 'npm', deploymentId),
    path.join(config.dataDir, 'cache', 'deps', deploymentId),
    ...revisions.map((id) => path.join(config.dataDir, 'artifacts', id)),
  ];
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
}
