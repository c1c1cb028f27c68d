import { DeploymentRepository, RevisionLogRepository, type DataSource } from '@slipway/db';
import { NotFoundError } from '@slipway/domain';
import type { LogsBody, LogTypeInput } from '../schemas/log.schema.js';

export interface LogPageView {
  logs: Array<{ id: string; timestamp: string; level: string; message: string }>;
  next_offset: string | null;
}

/**
 * Build and deploy log lines of revisions (CONTRACT C5), for the `GET .../logs` route and the
 * `POST /v1/projects/...` routes the published CLIs call. Reads only.
 */
export class LogService {
  constructor(private readonly dataSource: DataSource) {}

  /** One page of a revision's `type` lines; 404 for a deployment or revision outside the workspace. */
  async revisionPage(workspaceId: string, deploymentId: string, revisionId: string, type: LogTypeInput, page: LogsBody): Promise<LogPageView> {
    const repo = new DeploymentRepository(this.dataSource.manager);
    if (!(await repo.find(workspaceId, deploymentId))) throw NotFoundError.of('Deployment', deploymentId);
    if (!(await repo.findRevision(deploymentId, revisionId))) throw NotFoundError.of('Revision', revisionId);
    return this.page(revisionId, type, page);
  }

  /** Deploy lines of the deployment's active revision, else its latest; none before the first revision. */
  async deploymentDeployPage(workspaceId: string, deploymentId: string, page: LogsBody): Promise<LogPageView> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    const revisionId = deployment.activeRevisionId ?? deployment.latestRevisionId;
    return revisionId ? this.page(revisionId, 'deploy', page) : { logs: [], next_offset: null };
  }

  /**
   * `next_offset` is the id of the last line returned whenever the page has lines, not only
   * when more lines exist already: the CLIs follow a growing build log by sending it back, and
   * keep their last cursor when they get null, so null after a partial page would make them
   * start over and print every line again. Paging to the end thus ends with one empty page.
   * A RevisionLogWriter chains its inserts, so one writer's lines commit in id order and a
   * follower never skips them; only two writers of the same log committing out of id order
   * could hide a line from a live follower (re-reading from the start shows it).
   */
  private async page(revisionId: string, type: LogTypeInput, { limit, order, offset }: LogsBody): Promise<LogPageView> {
    const after = offset === undefined || offset === null || offset === '' ? null : String(offset);
    const { lines } = await new RevisionLogRepository(this.dataSource.manager).page(revisionId, type, { limit, order, after });
    return { logs: lines, next_offset: lines.length ? lines.at(-1)!.id : null };
  }
}
