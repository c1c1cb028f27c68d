import type { Request } from 'express';
import { addressKey, type RateLimits } from '@slipway/access';
import { ingestCredentialDeployment, isIngestCredential } from '@slipway/crypto';
import { DeploymentRepository, type DataSource } from '@slipway/db';
import { UnauthorizedError } from '@slipway/domain';

/** A writer bound to one deployment's tracing project (docs/tracing.md, Tracing a deployment). */
export interface TraceWriter {
  deploymentId: string;
  workspaceId: string;
  projectId: string;
}

/**
 * The api's side of the trace-ingest credential (`slwt_…`), for instances no trace front serves
 * (a listener's pods, which reach the api at SLIPWAY_PUBLIC_URL): accepted on the ingest routes
 * only (`traceIngest`), where it binds every run to its deployment's project, exactly as a trace
 * front does. Every other route takes it for what it is there: not an API key (401). A request is
 * charged to the deployment's own budget; a credential that does not check out, to the address.
 */
export class TraceWriters {
  constructor(
    private readonly dataSource: DataSource,
    private readonly secretsKeys: readonly Buffer[],
    private readonly limits: RateLimits,
  ) {}

  /** Whether the request presents a trace-ingest credential (then only `identify` may let it in). */
  static presents(req: Request): boolean {
    const key = req.headers['x-api-key'];
    return typeof key === 'string' && key.startsWith('slwt_');
  }

  /** The writer the credential binds, or 401 (charged to the client address). */
  async identify(req: Request): Promise<TraceWriter> {
    const key = req.headers['x-api-key'] as string;
    const deploymentId = ingestCredentialDeployment(key);
    const target =
      deploymentId && isIngestCredential(key, this.secretsKeys, deploymentId)
        ? await new DeploymentRepository(this.dataSource.manager).tracingTarget(deploymentId)
        : null;
    if (!deploymentId || !target?.projectId) {
      await this.limits.consume('address', addressKey(req.ip ?? req.socket.remoteAddress));
      throw new UnauthorizedError();
    }
    await this.limits.consume('key', `trace:${deploymentId}`);
    return { deploymentId, workspaceId: target.workspaceId, projectId: target.projectId };
  }
}
