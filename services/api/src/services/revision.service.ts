import { DeploymentRepository, Revision, type DataSource, type EntityManager, type Page } from '@slipway/db';
import { BadRequestError, isImageSource, isRevisionTerminal, NotFoundError, sourceName } from '@slipway/domain';
import { RevisionRepository, type RevisionFlow } from '@slipway/pipeline';
import { iso } from '../schemas/common.schema.js';
import { presentRevisionConfig, type SourceNames } from './deployment-view.js';
import type { DeploymentService, DeploymentView } from './deployment.service.js';
import { podPolicyIssuesFor } from './pod-policy-check.js';

/**
 * The API shape of a revision (docs/api.md, Revisions): secret names only, never values (and,
 * for revisions made since they were kept, each value's keyed fingerprint, to compare). An
 * internal_docker revision's `image_uri` is pinned to the digest it runs (`image_digest`).
 */
export function presentRevision(r: Revision, names: SourceNames = 'canonical') {
  return {
    id: r.id,
    deployment_id: r.deploymentId,
    status: r.status,
    status_message: r.statusMessage,
    source: sourceName(r.source, names),
    source_revision_config: presentRevisionConfig(r.sourceRevisionConfig),
    image_uri: r.imageUri,
    image_digest: r.imageDigest,
    resource_spec: r.resourceSpec,
    secrets: r.secretNames.map((name) => ({ name })),
    secret_fingerprints: r.secretFingerprints
      ? r.secretNames.map((name) => ({ name, fingerprint: r.secretFingerprints![name] ?? null }))
      : null,
    redeployed_from: r.redeployedFrom,
    trigger: r.trigger,
    created_by: r.createdBy,
    artifact_pruned_at: iso(r.artifactPrunedAt),
    created_at: iso(r.createdAt)!,
    updated_at: iso(r.updatedAt)!,
  };
}

export type RevisionView = ReturnType<typeof presentRevision>;

/** Revisions of a deployment: read, redeploy (roll back), interrupt. */
export class RevisionService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly deployments: DeploymentService,
    private readonly flow: RevisionFlow,
  ) {}

  async get(workspaceId: string, deploymentId: string, revisionId: string): Promise<RevisionView> {
    const revision = await new RevisionRepository(this.dataSource.manager).findInWorkspace(
      workspaceId,
      deploymentId,
      revisionId,
    );
    if (revision) return this.present(revision);
    await this.deployments.assertExists(workspaceId, deploymentId); // which of the two is missing
    throw NotFoundError.of('Revision', revisionId);
  }

  /** `remoteReconciled` (C13): none unless the deployment is (true) or is not (false) reconciled by a listener. */
  async list(
    workspaceId: string,
    deploymentId: string,
    filter: { statuses?: string[]; remoteReconciled?: boolean },
    page: Page,
  ): Promise<RevisionView[]> {
    const deployment = await this.deployments.get(workspaceId, deploymentId);
    const statuses = filter.statuses;
    if (
      filter.remoteReconciled !== undefined &&
      filter.remoteReconciled !== (deployment.source_config.listener_id !== null)
    )
      return [];
    return (await new RevisionRepository(this.dataSource.manager).listOfDeployment(deploymentId, statuses, page)).map(
      (r) => this.present(r),
    );
  }

  /**
   * A new revision reusing an old one's artifact, config snapshot and secrets: no rebuild (unless
   * retention pruned that artifact: then it is rebuilt). The deployment's current config follows,
   * so later PATCHes build on what is now rolled out.
   */
  async redeploy(
    manager: EntityManager,
    workspaceId: string,
    deploymentId: string,
    revisionId: string,
    requestId?: string,
  ): Promise<DeploymentView> {
    const deployment = await this.deployments.lock(manager, workspaceId, deploymentId);
    if (deployment.status === 'AWAITING_DELETE')
      throw new BadRequestError(`Deployment ID ${deploymentId} is being deleted.`);
    const old = await this.load(manager, deploymentId, revisionId);
    const artifact = isImageSource(old.source) ? old.imageUri : old.artifactRef;
    // Retention pruned its artifact (docs/operations.md, Quotas and retention): the new revision
    // has none, so it is built again from the same source (the pinned commit, or the same upload).
    const rebuild = !artifact && old.artifactPrunedAt !== null;
    if (!artifact && !rebuild) {
      throw new BadRequestError(
        `Revision ID ${revisionId} was never built (status ${old.status}); there is no artifact to redeploy.`,
      );
    }
    // The listener's policy may have narrowed since: an old spec it now refuses is not rolled out again.
    const refused = await podPolicyIssuesFor(
      manager,
      workspaceId,
      deployment.listenerId,
      deployment.name,
      old.resourceSpec,
    );
    if (refused.length) {
      throw new BadRequestError(
        `Revision ID ${revisionId}'s resource_spec is refused by its listener's pod ` +
          `policy: ${refused.map((i) => `${i.loc.slice(3).join('.')}: ${i.msg}`).join('; ')}`,
      );
    }
    const secrets = this.deployments.revisionSecrets(old);
    await new DeploymentRepository(manager).restoreRevisionConfig(
      deploymentId,
      old.resourceSpec,
      this.deployments.sealSecrets(secrets, deploymentId),
      secrets.map((s) => s.name),
    );
    await this.deployments.addRevision(
      manager,
      deployment,
      {
        trigger: 'redeploy',
        source: old.source,
        sourceRevisionConfig: old.sourceRevisionConfig,
        resourceSpec: old.resourceSpec,
        secrets,
        buildConfig: {
          install_command: old.buildConfig.install_command ?? null,
          build_command: old.buildConfig.build_command ?? null,
        },
        redeployedFrom: old.id,
        artifactRef: old.artifactRef,
        imageUri: rebuild ? null : old.imageUri,
        imageDigest: old.imageDigest,
      },
      requestId,
    );
    return this.deployments.get(workspaceId, deploymentId, manager);
  }

  /** Stops a revision that is not terminal; its worker sees the status and cancels its work. */
  async interrupt(
    manager: EntityManager,
    workspaceId: string,
    deploymentId: string,
    revisionId: string,
  ): Promise<RevisionView> {
    await this.deployments.lock(manager, workspaceId, deploymentId);
    const revision = await this.load(manager, deploymentId, revisionId);
    if (isRevisionTerminal(revision.status)) {
      throw new BadRequestError(
        `Revision ID ${revisionId} is already ${revision.status}; only a revision in progress can be interrupted.`,
      );
    }
    const applied = await this.flow.transition(manager, revisionId, 'INTERRUPTED', {
      message: 'Interrupted by request.',
    });
    if (!applied) throw new BadRequestError(`Revision ID ${revisionId} finished before it could be interrupted.`);
    return this.present(await this.load(manager, deploymentId, revisionId));
  }

  /** A revision of the deployment read within `manager`'s transaction (the one that just made it). */
  async getIn(manager: EntityManager, deploymentId: string, revisionId: string): Promise<RevisionView> {
    return this.present(await this.load(manager, deploymentId, revisionId));
  }

  private present(revision: Revision): RevisionView {
    return presentRevision(revision, this.deployments.sourceNames);
  }

  private async load(manager: EntityManager, deploymentId: string, revisionId: string): Promise<Revision> {
    const revision = await new RevisionRepository(manager).find(deploymentId, revisionId);
    if (!revision) throw NotFoundError.of('Revision', revisionId);
    return revision;
  }
}
