import { DeploymentRepository, transitionDeployment, type DataSource } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { placementOf, type Placements } from './placement/placement.js';

/**
 * Gives a deployment its own database (AWAITING_DATABASE → READY): its placement provisions the
 * stores (see Placement.provision), then the name is recorded. Idempotent: creating an existing
 * database is a no-op, the transition is conditional.
 */
export async function provisionDeployment(placements: Placements, dataSource: DataSource, deploymentId: string, log: Logger): Promise<boolean> {
  const d = await new DeploymentRepository(dataSource.manager).placementRow(deploymentId);
  if (!d || d.status !== 'AWAITING_DATABASE') return false;
  const database = deploymentDatabaseName(d.name, deploymentId);
  await placementOf(placements, d).provision(deploymentId, database, log);
  return dataSource.transaction(async (m) => {
    await new DeploymentRepository(m).recordDatabase(deploymentId, database);
    return (await transitionDeployment(m, deploymentId, 'READY', ['AWAITING_DATABASE'])) !== null;
  });
}

export function provisionDeploymentProcessor(dataSource: DataSource, placements: Placements): JobHandler<'provision.deployment'> {
  return async ({ deploymentId }, { log }) => {
    await provisionDeployment(placements, dataSource, deploymentId, log);
  };
}
