import { randomUUID } from 'node:crypto';
import type { ServingUrls } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import {
  Deployment,
  DEPLOYMENT_LISTENER_FK,
  DEPLOYMENT_NAME_UNIQUE,
  DeploymentRepository,
  DEPLOYMENT_INTEGRATION_FK,
  isForeignKeyViolation,
  isUniqueViolation,
  Revision,
  runRider,
  TracingProjectRepository,
  type DataSource,
  type EntityManager,
  type InsertedDeployment,
  type SlotClaim,
  type StoredSourceConfig,
} from '@slipway/db';
import {
  canonicalSource,
  createDeploymentProblems,
  createDeploymentType,
  imagePullSecretInputProblems,
  NotFoundError,
  patchCreatesRevision,
  refuseInvalid,
  resolveResourceSpecWithin,
  type ResourceCeilings,
  resourceSpecInputProblems,
  systemActor,
  type SecretEntry,
} from '@slipway/domain';
import { RevisionRows } from './revision-rows.js';
import { enqueueAllInOutbox, outboxJob } from '@slipway/jobs';
import { beginDeploymentDelete, RevisionRepository, type RevisionFlow } from '@slipway/pipeline';
import { DeploymentReads, type PresentableDeployment } from '../reads/deployment-reads.js';
import type { CreateDeploymentBody, ListDeploymentsQuery, PatchDeploymentBody } from '../schemas/deployment.schema.js';
import { assertListenerServes, assertNoListeners, assertPatchable, nameTaken } from './deployment-checks.js';
import type { CreateDraft, ImageResolver, RepositoryCatalog, RevisionDraft } from './deployment-types.js';
import { presentDeployment, type DeploymentView, type SourceNames } from './deployment-view.js';
import {
  applySecrets,
  assertBuildable,
  buildConfigOf,
  defaultRevisionConfig,
  firstRevisionConfig,
  revisionConfigFrom,
  storedSourceConfig,
} from './deployment-rules.js';
import { assertPodPolicy } from './pod-policy-check.js';
import { previewSecretOverrides, storedPreviewSettings } from './preview-settings.js';
import type { QuotaService } from './quota.service.js';
import { assertUploadCompleted } from './upload.service.js';
import type { DomainClaims } from './domain.service.js';

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
    private readonly repositories: RepositoryCatalog,
    private readonly quotas: QuotaService,
    private readonly ceilings: ResourceCeilings,
    /** Where cloud-hosted deployments answer (their `url`). */
    private readonly urls?: ServingUrls,
    private readonly images?: ImageResolver,
    /** How responses name sources (`config.sourceNames`). */
    readonly sourceNames: SourceNames = 'canonical',
    /** `source_config.custom_url` claims its host on Slipway's own runtime (docs/api.md, Domains). */
    private readonly domains?: DomainClaims,
  ) {
    this.rows = new RevisionRows(secrets, images);
  }

  /** How a new revision's row, config and image are made from a draft. */
  private readonly rows: RevisionRows;

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

  /**
   * Everything create checks without the database, then (repohost) the integration's
   * repository list. Runs before the create transaction opens: asking a forge can take many
   * seconds (up to 100 pages), and holding a pool connection meanwhile let ten creates against
   * a slow forge exhaust the pool and make every request answer 503.
   */
  async prepareCreate(workspaceId: string, body: CreateDeploymentBody): Promise<CreateDraft> {
    const source = canonicalSource(body.source)!;
    // Every problem of the request in one 422 (docs/api.md, Errors), not only the first check's.
    refuseInvalid(createDeploymentProblems(source, body, this.ceilings));
    const type = createDeploymentType(source, body);
    const resourceSpec = resolveResourceSpecWithin(body.source_config.resource_spec ?? {}, type, this.ceilings);
    const revisionConfig = firstRevisionConfig(source, body.source_revision_config);
    const sourceConfig = storedSourceConfig(body.source_config);
    // ---- repohost (C4): the integration lists the repository; repo_ref defaults to its default branch.
    if (source === 'repohost') {
      const repository = await this.repositories.findRepository(
        workspaceId,
        sourceConfig.integration_id!,
        sourceConfig.repo_url!,
      );
      if (revisionConfig && revisionConfig.repo_ref == null) revisionConfig.repo_ref = repository.default_branch;
    }
    return { source, type, resourceSpec, revisionConfig, sourceConfig };
  }

  /**
   * Writes a deployment `prepareCreate` checked, in the caller's transaction, which
   * `withDeploymentSlot` runs: a create that finds no free deployment slot rolls back and runs again.
   */
  async create(
    manager: EntityManager,
    workspaceId: string,
    body: CreateDeploymentBody,
    draft: CreateDraft,
    requestId?: string,
    trigger: 'create' | 'preview' = 'create',
  ): Promise<DeploymentView> {
    const { source, type, resourceSpec, revisionConfig } = draft;
    // Nothing is stored yet, so a masked value has nothing to keep (e.g. a GET body re-posted).
    const secrets = applySecrets([], body.secrets);
    const id = randomUUID();
    const sourceConfig = {
      ...draft.sourceConfig,
      previews: storedPreviewSettings(body.source_config.previews, null, this.secrets, id),
    };
    refuseInvalid(imagePullSecretInputProblems(source, sourceConfig.listener_id, resourceSpec, secrets));
    // With a listener, the deployment's insert reads it (below); without, none may exist.
    if (source === 'external_container' && !sourceConfig.listener_id) await assertNoListeners(manager, workspaceId);

    const deployment: Deployment = Object.assign(new Deployment(), {
      id,
      workspaceId,
      name: body.name,
      source,
      status: 'AWAITING_DATABASE',
      deploymentType: type,
      tracingProjectId: randomUUID(), // unless one of its name is re-attached (insertWithTracingProject)
      listenerId: sourceConfig.listener_id ?? null,
      integrationId: source === 'repohost' ? (sourceConfig.integration_id ?? null) : null,
      sourceConfig,
      resourceSpec,
      secretsSealed: this.sealSecrets(secrets, id),
      secretNames: secrets.map((s) => s.name),
      imageVersion: body.image_version ?? null,
      latestRevisionId: null,
      activeRevisionId: null,
      databaseName: null,
    } satisfies Partial<Deployment>);
    let inserted: InsertedDeployment;
    try {
      inserted = await new DeploymentRepository(manager).insertWithTracingProject(deployment);
    } catch (err) {
      if (isUniqueViolation(err, DEPLOYMENT_NAME_UNIQUE)) throw nameTaken(body.name, workspaceId);
      // The integration was deleted after findRepository saw it.
      if (isForeignKeyViolation(err, DEPLOYMENT_INTEGRATION_FK))
        throw NotFoundError.of('Integration', sourceConfig.integration_id!);
      if (isForeignKeyViolation(err, DEPLOYMENT_LISTENER_FK))
        throw NotFoundError.of('Listener', sourceConfig.listener_id!);
      throw err;
    }
    // Either refusal rolls the insert back. The listener's comes first, as when it was read first.
    if (source === 'external_container' && sourceConfig.listener_id)
      assertListenerServes(inserted.listener ?? null, sourceConfig, body.name, resourceSpec);
    if (!inserted.tracingProject) throw nameTaken(body.name, workspaceId);
    await this.domains?.followCustomUrl(manager, deployment, sourceConfig.custom_url);
    const provision = outboxJob('provision.deployment', { deploymentId: id, ...(requestId ? { requestId } : {}) });

    // The slot claim rides on the last statement, so a claimed slot is locked only until COMMIT.
    const slot = this.quotas.slots.claim(manager, workspaceId, id);
    let claim: SlotClaim;
    // An upload deployment has nothing to build until its tarball arrives (docs/api.md, Uploads and the deploy CLIs).
    if (revisionConfig) {
      const first = this.rows.row(deployment, {
        trigger,
        source,
        sourceRevisionConfig: revisionConfig,
        resourceSpec,
        secrets,
        buildConfig: buildConfigOf(sourceConfig),
      });
      // A deployment inserted by this transaction has nothing in flight: no lock or check needed.
      claim = await this.flow.insertFirst(manager, first, requestId, [provision], slot);
      deployment.latestRevisionId = first.id;
    } else {
      await enqueueAllInOutbox(manager, [provision]);
      claim = await runRider(manager, slot);
    }
    this.quotas.slots.settle(workspaceId, claim, resourceSpec);
    // Answered from what this transaction wrote: the insert returned the row's defaults (its
    // timestamps are the transaction's now(), as is the latest-revision update's), a new
    // deployment has no tags, and its latest revision's config is `revisionConfig`.
    return presentDeployment(
      deployment,
      revisionConfig && { sourceRevisionConfig: revisionConfig },
      secrets.map((s) => s.name),
      [],
      this.urls,
      this.sourceNames,
    );
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
    assertPatchable(deployment, body);

    const input = body.source_config ?? {};
    const sourceConfig: StoredSourceConfig = { ...deployment.sourceConfig };
    for (const field of [
      'build_on_push',
      'custom_url',
      'install_command',
      'build_command',
      'serving_auth',
      'tracing',
    ] as const) {
      if (input[field] != null) (sourceConfig as Record<string, unknown>)[field] = input[field];
    }
    if (input.previews != null)
      sourceConfig.previews = storedPreviewSettings(input.previews, deployment.sourceConfig.previews, this.secrets, id);
    let resourceSpec = deployment.resourceSpec;
    if (input.resource_spec != null) {
      refuseInvalid(resourceSpecInputProblems(input.resource_spec, deployment.deploymentType, this.ceilings));
      resourceSpec = resolveResourceSpecWithin(input.resource_spec, deployment.deploymentType, this.ceilings);
      await assertPodPolicy(manager, workspaceId, deployment.listenerId, deployment.name, resourceSpec);
      await this.quotas.assertScale(manager, workspaceId, resourceSpec);
    }

    let secrets = this.openSecrets(deployment.secretsSealed, deployment.id);
    if (body.secrets != null) secrets = applySecrets(secrets, body.secrets);
    if (body.secrets != null || input.resource_spec != null)
      refuseInvalid(imagePullSecretInputProblems(deployment.source, deployment.listenerId, resourceSpec, secrets));

    if (input.custom_url != null && input.custom_url !== deployment.sourceConfig.custom_url)
      await this.domains?.followCustomUrl(manager, deployment, input.custom_url);
    await new DeploymentRepository(manager).applyPatch(id, {
      sourceConfig,
      resourceSpec,
      secretsSealed: this.sealSecrets(secrets, id),
      imageVersion: body.image_version ?? deployment.imageVersion,
      secretNames: secrets.map((s) => s.name),
    });

    const revisionInput = body.source_revision_config ?? {};
    const uploadRevision = body.revision_source != null && revisionInput.source_tarball_path != null;
    // Only a completed upload of this very deployment may be built (C10), never a guessed path.
    if (revisionInput.source_tarball_path != null)
      await assertUploadCompleted(manager, id, revisionInput.source_tarball_path);
    if (revisionTrigger || patchCreatesRevision(body) || uploadRevision) {
      const latest = await this.rows.latest(manager, deployment);
      const revisionConfig = revisionConfigFrom(
        revisionInput,
        latest?.sourceRevisionConfig ?? defaultRevisionConfig(deployment.source),
      );
      assertBuildable(deployment.source, revisionConfig);
      await this.addRevision(
        manager,
        deployment,
        {
          trigger:
            revisionTrigger ??
            (uploadRevision
              ? 'upload'
              : body.revision_source === 'internal_docker' && revisionInput.image_uri != null
                ? 'image_push'
                : 'patch'),
          source: deployment.source,
          sourceRevisionConfig: revisionConfig,
          resourceSpec,
          secrets,
          buildConfig: buildConfigOf(sourceConfig),
          ...(deployment.source === 'internal_docker'
            ? await this.rows.internalImage(deployment, revisionInput, latest)
            : {}),
        },
        requestId,
      );
    }
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
