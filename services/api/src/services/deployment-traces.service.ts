import { DeploymentRepository, type DataSource } from '@slipway/db';
import { NotFoundError } from '@slipway/domain';
import { TraceRepository, traceView, type TraceView } from '@slipway/tracing';
import type { PaginationQuery } from '../schemas/common.schema.js';

/** The traces of a deployment's tracing project (docs/tracing.md, A deployment's traces). Reads only. */
export class DeploymentTracesService {
  constructor(private readonly dataSource: DataSource) {}

  /** A page of the deployment's traces, newest first; 404 for a deployment outside the workspace. */
  async list(workspaceId: string, deploymentId: string, page: PaginationQuery): Promise<TraceView[]> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    if (!deployment.tracingProjectId) return [];
    return (
      await new TraceRepository(this.dataSource.manager).listForProject(workspaceId, deployment.tracingProjectId, page)
    ).map(traceView);
  }
}
