import { DeploymentRepository, type DataSource } from '@slipway/db';
import type { JobHandler } from '@slipway/jobs';
import { placementOf, type Placements } from './placement/placement.js';

/**
 * `teardown.deployment` for a deployment in AWAITING_DELETE (any other status: nothing to do).
 * Its placement takes it down: the embedded runtime stops everything it runs and removes the
 * row; a listener's agent is told through the desired state (`delete`) and its report removes
 * the row.
 */
export function teardownDeploymentProcessor(
  dataSource: DataSource,
  placements: Placements,
): JobHandler<'teardown.deployment'> {
  return async ({ deploymentId }, { job, log }) => {
    const d = await new DeploymentRepository(dataSource.manager).placementRow(deploymentId);
    if (!d || d.status !== 'AWAITING_DELETE') return;
    await placementOf(placements, d).teardown(
      { id: deploymentId, name: d.name },
      { job, log: log.child({ listenerId: d.listenerId }) },
    );
  };
}
