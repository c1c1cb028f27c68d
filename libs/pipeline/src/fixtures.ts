import { DeploymentRepository, queryRows, type EntityManager } from '@slipway/db';
import { REVISION_STATUSES } from '@slipway/domain';
import { writeRevision } from './status-transitions.js';

/**
 * Writes and reads for the bench's fixtures only, never product code: a fixture stands in for a
 * build or a rollout the bench does not run, so these skip the flow (no status changes).
 */
export class RevisionFixtures {
  constructor(private readonly manager: EntityManager) {}

  /** Makes the revision its deployment's active one, serving the prebuilt artifact directory `artifactRef`. */
  async serveArtifact(deploymentId: string, revisionId: string, artifactRef: string): Promise<void> {
    await writeRevision(this.manager, revisionId, { from: REVISION_STATUSES, set: { artifactRef } });
    await new DeploymentRepository(this.manager).setFixtureActiveRevision(deploymentId, revisionId);
  }

  /** Every revision's id and attempt: what a build's cgroups are named by (`b-<revision>-a<attempt>`). */
  attempts(): Promise<Array<{ id: string; attempt: number }>> {
    return queryRows<{ id: string; attempt: number }>(this.manager, `SELECT id, attempt FROM revisions`);
  }
}
