import { DeploymentRepository, type DataSource } from '@slipway/db';
import { NotFoundError } from '@slipway/domain';
import { RevisionHistoryRepository } from '@slipway/pipeline';
import { iso } from '../schemas/common.schema.js';

/**
 * How a deployment's recent revisions moved through their statuses, with the time spent in each
 * (docs/api.md, Revisions): what the console's timeline and phase chart draw. Reads only.
 */
export class RevisionHistoryService {
  constructor(private readonly dataSource: DataSource) {}

  async recent(workspaceId: string, deploymentId: string, limit: number) {
    if (!(await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId))) {
      throw NotFoundError.of('Deployment', deploymentId);
    }
    const histories = await new RevisionHistoryRepository(this.dataSource.manager).recent(deploymentId, limit);
    return {
      resources: histories.map((h) => ({
        revision_id: h.revisionId,
        status: h.status,
        status_message: h.statusMessage,
        created_at: iso(h.createdAt)!,
        changes: h.changes.map((c) => ({
          from: c.from,
          to: c.to,
          at: iso(c.at)!,
          time_in_status_ms: c.timeInStatusMs,
        })),
      })),
    };
  }
}
