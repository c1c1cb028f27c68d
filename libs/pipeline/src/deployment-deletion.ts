import {
  DeploymentDomainRepository,
  DeploymentRepository,
  PreviewRepository,
  RegistryRepository,
  transitionDeployment,
  type EntityManager,
} from '@slipway/db';
import { enqueueInOutbox } from '@slipway/jobs';
import type { RevisionFlow } from './revision-flow.js';
import { RevisionRepository } from './revision.repository.js';

/** Why a preview's delete started (its `preview.deleted` event says so). */
export type PreviewEndReason = 'api' | 'closed' | 'expired' | 'parent_deleted' | 'max_active';

/**
 * Starts a deployment's delete (docs/api.md, Deployments, DELETE), in the caller's transaction,
 * which holds the deployment's row lock: AWAITING_DELETE, its in-flight and waiting revisions
 * INTERRUPTED through the flow, teardown handed to the deployer through the outbox, its push
 * tokens revoked, its custom domains released, and the same for each of its previews (reason
 * `parent_deleted`). The row disappears when teardown ends. A deployment being deleted already
 * is left as it is. Shared by the api's DELETE and the reconciler (expired previews).
 */
export async function beginDeploymentDelete(
  manager: EntityManager,
  flow: RevisionFlow,
  deploymentId: string,
  options: { requestId?: string; previewReason?: PreviewEndReason } = {},
): Promise<boolean> {
  if (!(await new DeploymentRepository(manager).markPreviewEnding(deploymentId, options.previewReason ?? 'api')))
    return false;
  await transitionDeployment(manager, deploymentId, 'AWAITING_DELETE');
  // Through the flow as every status change; nothing waiting is promoted now (AWAITING_DELETE).
  for (const revisionId of await new RevisionRepository(manager).openOfDeployment(deploymentId)) {
    await flow.transition(manager, revisionId, 'INTERRUPTED', { message: 'Deployment deleted.' });
  }
  await enqueueInOutbox(manager, 'teardown.deployment', {
    deploymentId,
    ...(options.requestId ? { requestId: options.requestId } : {}),
  });
  // Its images can no longer be pushed or pulled with the push tokens it handed out.
  await new RegistryRepository(manager).revokeOfDeployment(deploymentId);
  await new DeploymentDomainRepository(manager).releaseAll(deploymentId);
  for (const id of await new PreviewRepository(manager).lockActiveIds(deploymentId))
    await beginDeploymentDelete(manager, flow, id, { requestId: options.requestId, previewReason: 'parent_deleted' });
  return true;
}
