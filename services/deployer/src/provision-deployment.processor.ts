import {
  copyDeploymentDatabase,
  DeploymentRepository,
  pauseCopiedCrons,
  PreviewRepository,
  transitionDeployment,
  type DataSource,
} from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { placementOf, type Placements } from './placement/placement.js';

/**
 * Gives a deployment its own database (AWAITING_DATABASE → READY): its placement provisions the
 * stores (see Placement.provision), a preview of a parent that says so gets a copy of the
 * parent's data (a retry copies again over a partial copy), then the name is recorded. Idempotent: creating an existing
 * database is a no-op, the transition is conditional.
 */
export async function provisionDeployment(
  placements: Placements,
  dataSource: DataSource,
  deploymentId: string,
  log: Logger,
  databaseUrl: string,
): Promise<boolean> {
  const d = await new DeploymentRepository(dataSource.manager).placementRow(deploymentId);
  if (!d || d.status !== 'AWAITING_DATABASE') return false;
  const database = deploymentDatabaseName(d.name, deploymentId);
  await placementOf(placements, d).provision(deploymentId, database, log);
  // A preview whose parent says `database: "copy"` starts from a copy of the parent's data (docs/api.md, Previews).
  const source = await new PreviewRepository(dataSource.manager).copySource(deploymentId);
  if (source) {
    const copy = await copyDeploymentDatabase(databaseUrl, source, database);
    // The parent's schedules must not fire from the preview: its crons start paused.
    const paused = await pauseCopiedCrons(databaseUrl, database);
    log.info(
      { deploymentId, from: source, ms: copy.ms, bytes: copy.bytes, pausedCrons: paused },
      "preview database copied from its parent's",
    );
  }
  return dataSource.transaction(async (m) => {
    await new DeploymentRepository(m).recordDatabase(deploymentId, database);
    return (await transitionDeployment(m, deploymentId, 'READY', ['AWAITING_DATABASE'])) !== null;
  });
}

export function provisionDeploymentProcessor(
  dataSource: DataSource,
  placements: Placements,
  databaseUrl: string,
): JobHandler<'provision.deployment'> {
  return async ({ deploymentId }, { log }) => {
    await provisionDeployment(placements, dataSource, deploymentId, log, databaseUrl);
  };
}
