import type { ServingUrls } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import {
  Deployment,
  DeploymentRepository,
  Revision,
  TracingProjectRepository,
  type DataSource,
  type EntityManager,
} from '@slipway/db';
import { NotFoundError, type ResourceCeilings, systemActor, type SecretEntry } from '@slipway/domain';
import { beginDeploymentDelete, RevisionRepository, type RevisionFlow } from '@slipway/pipeline';
import { DeploymentReads, type PresentableDeployment } from '../reads/deployment-reads.js';
import type { ListDeploymentsQuery, PatchDeploymentBody } from '../schemas/deployment.schema.js';
import { DeploymentCreate } from './deployment-create.js';
import { DeploymentPatch } from './deployment-patch.js';
import { buildConfigOf } from './deployment-rules.js';
import type { CreateDraft, ImageResolver, RepositoryCatalog, RevisionDraft } from './deployment-types.js';
import { presentDeployment, type DeploymentView, type SourceNames } from './deployment-view.js';
import type { DomainClaims } from './domain.service.js';
import { previewSecretOverrides } from './preview-settings.js';
import type { QuotaService } from './quota.service.js';
import { RevisionRows } from './revision-rows.js';

export { presentDeployment, type DeploymentView } from './deployment-view.js';

export type { CreateDraft, ImageResolver, RepositoryCatalog, RevisionDraft } from './deployment-types.js';

/**
 * Deployments (docs/api.md, Deployments): create, read, list, update, delete. Every write is one
 * transaction holding the deployment row lock, and hands work to the pipeline only through
 * the outbox, so a failure leaves nothing half-written and a Redis outage loses nothing.
 */
export class DeploymentService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
    private readonly flow: RevisionFlow,
    repositories: RepositoryCatalog,
    private readonly quotas: QuotaService,
    ceilings: ResourceCeilings,
    /** Where cloud-hosted deployments answer (their `url`). */
    private readonly urls?: ServingUrls,
    images?: ImageResolver,
    /** How responses name sources (`config.sourceNames`). */
    readonly sourceNames: SourceNames = 'canonical',
    /** `source_config.custom_url` claims its host on Slipway's own runtime (docs/api.md, Domains). */
    domains?: DomainClaims,
  ) {
    const rows = new RevisionRows(secrets, images);
    this.rows = rows;
    this.creates = new DeploymentCreate({
      secrets,
      flow,
      repositories,
      quotas,
      ceilings,
      rows,
      urls,
      sourceNames,
      domains,
    });
    this.patches = new DeploymentPatch({ secrets, quotas, ceilings, rows, domains });
  }

  /** How a new revision's row, config and image are made from a draft. */
  private readonly rows: RevisionRows;
  /** POST /deployments: its checks before the transaction and its write inside. */
  private readonly creates: DeploymentCreate;
  /** PATCH: what it writes to the deployment and the revision draft it makes. */
  private readonly patches: DeploymentPatch;

  // ---------------------------------------------------------------- reads

  async get(
    workspaceId: string,
    id: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<DeploymentView> {
    const row = await new DeploymentReads(manager).findPresentable(workspaceId, id);
    if (!row) throw NotFoundError.of('Deployment', id);
    return this.presentRow(row);
  }

  async list(workspaceId: string, query: ListDeploymentsQuery): Promise<DeploymentView[]> {
    const rows = await new DeploymentReads(this.dataSource.manager).list(
      workspaceId,
      {
        nameContains: query.name_contains,
        name: query.name,
        status: query.status,
        remoteReconciled: query.remote_reconciled,
        tagValueIds: query.tag_value_ids,
        imageVersion: query.image_version,
        deploymentType: query.deployment_type,
        deploymentIds: query.deployment_ids,
        isPreview: query.is_preview,
        previewOf: query.preview_of,
      },
      query,
    );
    return rows.map((row) => this.presentRow(row));
  }

  /** Whether the deployment exists in the workspace (a 404 otherwise), without presenting it. */
  async assertExists(workspaceId: string, id: string): Promise<void> {
    if (!(await new DeploymentRepository(this.dataSource.manager).exists(workspaceId, id)))
      throw NotFoundError.of('Deployment', id);
  }

  /** Loads a deployment of the workspace with its row locked for the rest of the transaction. */
  async lock(manager: EntityManager, workspaceId: string, id: string): Promise<Deployment> {
    const deployment = await new DeploymentRepository(manager).lockInWorkspace(workspaceId, id);
    if (!deployment) throw NotFoundError.of('Deployment', id);
    return deployment;
  }

  // ---------------------------------------------------------------- create

  /** Everything create checks before its transaction opens (DeploymentCreate.prepare). */
  prepareCreate(...args: Parameters<DeploymentCreate['prepare']>): Promise<CreateDraft> {
    return this.creates.prepare(...args);
  }

  /** Writes a deployment `prepareCreate` checked, in the caller's transaction (DeploymentCreate.create). */
  create(...args: Parameters<DeploymentCreate['create']>): Promise<DeploymentView> {
    return this.creates.create(...args);
  }

  /** Runs a create's transaction (`attempt`) until it claims a deployment slot (DeploymentSlots.withSlot). */
  withDeploymentSlot<T>(workspaceId: string, attempt: () => Promise<T>): Promise<T> {
    return this.quotas.slots.withSlot(workspaceId, attempt);
  }

  // ---------------------------------------------------------------- update

  /**
   * PATCH, or with a `revisionTrigger` the `POST .../revisions` of docs/api.md, Deployments (or a
   * preview's rollout): the same body, but a new revision is made even when no revision field changed.
   */
  async patch(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    body: PatchDeploymentBody,
    requestId?: string,
    revisionTrigger: 'api_revision' | 'preview' | null = null,
  ): Promise<DeploymentView> {
    const deployment = await this.lock(manager, workspaceId, id);
    const draft = await this.patches.apply(manager, deployment, body, revisionTrigger);
    if (draft) await this.addRevision(manager, deployment, draft, requestId);
    return this.get(workspaceId, id, manager);
  }

  // ---------------------------------------------------------------- delete

  /**
   * DELETE: AWAITING_DELETE, in-flight and waiting revisions INTERRUPTED, teardown enqueued.
   * The row disappears when teardown ends. Deleting again while that runs is a no-op.
   */
  async delete(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    deleteTracingProject: boolean,
    requestId?: string,
  ): Promise<void> {
    const deployment = await this.lock(manager, workspaceId, id);
    await beginDeploymentDelete(manager, this.flow, id, { requestId });
    if (deleteTracingProject && deployment.tracingProjectId) {
      await new DeploymentRepository(manager).detachTracingProject(id);
      await new TracingProjectRepository(manager).delete(deployment.tracingProjectId);
    }
  }

  /** `dev_free` deployments in the whole organization (C13 free-count). */
  freeCount(organizationId: string): Promise<number> {
    return new DeploymentRepository(this.dataSource.manager).countOfTypeInOrganization(organizationId, 'dev_free');
  }

  // ---------------------------------------------------------------- revisions

  /**
   * Inserts a revision (CREATING) snapshotting `draft`, makes it the latest, and hands it to
   * the flow, which starts it or queues it behind the one in flight.
   */
  async addRevision(
    manager: EntityManager,
    deployment: Deployment,
    draft: RevisionDraft,
    requestId?: string,
  ): Promise<string> {
    const row = this.rows.row(deployment, draft);
    await new RevisionRepository(manager).insertAsLatest(row);
    await this.flow.admit(manager, deployment.id, row.id, requestId);
    return row.id;
  }

  /**
   * Push webhook (C8): a revision building `branch` at `sha` from the latest revision's config
   * and the deployment's current resources, secrets and build settings. The caller holds the
   * deployment lock (`lock`) and has checked that the deployment builds this branch on push.
   */
  async addPushRevision(
    manager: EntityManager,
    deployment: Deployment,
    branch: string,
    sha: string,
    requestId?: string,
  ): Promise<string> {
    return this.addRevision(
      manager,
      deployment,
      {
        trigger: 'push',
        createdBy: systemActor(`push to ${branch}`, deployment.integrationId),
        source: deployment.source,
        sourceRevisionConfig: await this.rows.nextConfig(manager, deployment, {
          repo_ref: branch,
          repo_commit_sha: sha,
        }),
        resourceSpec: deployment.resourceSpec,
        secrets: this.openSecrets(deployment.secretsSealed, deployment.id),
        buildConfig: buildConfigOf(deployment.sourceConfig),
      },
      requestId,
    );
  }

  /** A revision's secrets, opened (for redeploy, which re-seals them for the new revision). */
  revisionSecrets(revision: Revision): SecretEntry[] {
    return this.openSecrets(revision.secretsSealed, revision.id);
  }

  sealSecrets(secrets: readonly SecretEntry[], context: string): string | null {
    return this.secrets.sealSecrets(secrets, context);
  }

  openSecrets(sealed: string | null, context: string): SecretEntry[] {
    return this.secrets.openSecrets(sealed, context);
  }

  /** A parent's secret overrides for its previews, opened. */
  previewOverrides(parent: Deployment): SecretEntry[] {
    return previewSecretOverrides(parent.sourceConfig.previews, this.secrets, parent.id);
  }

  // ---------------------------------------------------------------- helpers

  private presentRow({
    deployment: d,
    latestRevisionConfig,
    tagValueIds,
    agentServer,
    previewFeedback,
  }: PresentableDeployment): DeploymentView {
    // Rows from before secret_names (until `slipway migrate` filled them) show what their box holds.
    const names = d.secretNames ?? this.openSecrets(d.secretsSealed, d.id).map((s) => s.name);
    const latest = latestRevisionConfig && { sourceRevisionConfig: latestRevisionConfig };
    return presentDeployment(d, latest, names, tagValueIds, this.urls, this.sourceNames, agentServer, previewFeedback);
  }
}
