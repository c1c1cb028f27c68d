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
  runRider,
  type EntityManager,
  type InsertedDeployment,
  type SlotClaim,
} from '@slipway/db';
import {
  canonicalSource,
  createDeploymentProblems,
  createDeploymentType,
  imagePullSecretInputProblems,
  initialDeploymentState,
  NotFoundError,
  refuseInvalid,
  resolveResourceSpecWithin,
  type ResourceCeilings,
} from '@slipway/domain';
import { enqueueAllInOutbox, outboxJob } from '@slipway/jobs';
import type { RevisionFlow } from '@slipway/pipeline';
import type { CreateDeploymentBody } from '../schemas/deployment.schema.js';
import { assertListenerServes, assertNoListeners, nameTaken } from './deployment-checks.js';
import { applySecrets, buildConfigOf, firstRevisionConfig, storedSourceConfig } from './deployment-rules.js';
import type { CreateDraft, RepositoryCatalog } from './deployment-types.js';
import { presentDeployment, type DeploymentView, type SourceNames } from './deployment-view.js';
import type { DomainClaims } from './domain.service.js';
import { storedPreviewSettings } from './preview-settings.js';
import type { QuotaService } from './quota.service.js';
import type { RevisionRows } from './revision-rows.js';

/** What a create is given by DeploymentService, which owns the rest of the deployment's life. */
export interface DeploymentCreateDeps {
  secrets: SecretsCodec;
  flow: RevisionFlow;
  repositories: RepositoryCatalog;
  quotas: QuotaService;
  ceilings: ResourceCeilings;
  /** How a new revision's row, config and image are made from a draft. */
  rows: RevisionRows;
  /** Where cloud-hosted deployments answer (their `url`). */
  urls?: ServingUrls;
  /** How responses name sources (`config.sourceNames`). */
  sourceNames: SourceNames;
  /** `source_config.custom_url` claims its host on Slipway's own runtime (docs/api.md, Domains). */
  domains?: DomainClaims;
}

/**
 * POST /deployments (docs/api.md, Deployments) in its two halves: the checks that need no
 * transaction (`prepare`), then the write inside the caller's (`create`): the deployment row,
 * its quota slot and, unless it waits for an upload, its first revision with the jobs that start it.
 */
export class DeploymentCreate {
  constructor(private readonly deps: DeploymentCreateDeps) {}

  /**
   * Everything create checks without the database, then (repohost) the integration's
   * repository list. Runs before the create transaction opens: asking a forge can take many
   * seconds (up to 100 pages), and holding a pool connection meanwhile let ten creates against
   * a slow forge exhaust the pool and make every request answer 503.
   */
  async prepare(workspaceId: string, body: CreateDeploymentBody): Promise<CreateDraft> {
    const { ceilings, repositories } = this.deps;
    const source = canonicalSource(body.source)!;
    // Every problem of the request in one 422 (docs/api.md, Errors), not only the first check's.
    refuseInvalid(createDeploymentProblems(source, body, ceilings));
    const type = createDeploymentType(source, body);
    const resourceSpec = resolveResourceSpecWithin(body.source_config.resource_spec ?? {}, type, ceilings);
    const revisionConfig = firstRevisionConfig(source, body.source_revision_config);
    const sourceConfig = storedSourceConfig(body.source_config);
    // ---- repohost (C4): the integration lists the repository; repo_ref defaults to its default branch.
    if (source === 'repohost') {
      const repository = await repositories.findRepository(
        workspaceId,
        sourceConfig.integration_id!,
        sourceConfig.repo_url!,
      );
      if (revisionConfig && revisionConfig.repo_ref == null) revisionConfig.repo_ref = repository.default_branch;
    }
    return { source, type, resourceSpec, revisionConfig, sourceConfig };
  }

  /**
   * Writes a deployment `prepare` checked, in the caller's transaction, which
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
    const { secrets: codec, flow, quotas, rows, domains } = this.deps;
    const { source, type, resourceSpec, revisionConfig } = draft;
    // Nothing is stored yet, so a masked value has nothing to keep (e.g. a GET body re-posted).
    const secrets = applySecrets([], body.secrets);
    const id = randomUUID();
    const sourceConfig = {
      ...draft.sourceConfig,
      previews: storedPreviewSettings(body.source_config.previews, null, codec, id),
    };
    refuseInvalid(imagePullSecretInputProblems(source, sourceConfig.listener_id, resourceSpec, secrets));
    // With a listener, the deployment's insert reads it (below); without, none may exist.
    if (source === 'external_container' && !sourceConfig.listener_id) await assertNoListeners(manager, workspaceId);

    // A listener's deployment is inserted with its database name, all its provisioning
    // (initialDeploymentState): no provision.deployment job; its first rollout makes it READY.
    const initial = initialDeploymentState(body.name, id, sourceConfig.listener_id ?? null);
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
      secretsSealed: codec.sealSecrets(secrets, id),
      secretNames: secrets.map((s) => s.name),
      imageVersion: body.image_version ?? null,
      latestRevisionId: null,
      activeRevisionId: null,
      databaseName: initial.databaseName,
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
    await domains?.followCustomUrl(manager, deployment, sourceConfig.custom_url);
    const provision = initial.provision
      ? [outboxJob('provision.deployment', { deploymentId: id, ...(requestId ? { requestId } : {}) })]
      : [];

    // The slot claim rides on the last statement, so a claimed slot is locked only until COMMIT.
    const slot = quotas.slots.claim(manager, workspaceId, id);
    let claim: SlotClaim;
    // An upload deployment has nothing to build until its tarball arrives (docs/api.md, Uploads and the deploy CLIs).
    if (revisionConfig) {
      const first = rows.row(deployment, {
        trigger,
        source,
        sourceRevisionConfig: revisionConfig,
        resourceSpec,
        secrets,
        buildConfig: buildConfigOf(sourceConfig),
      });
      // A deployment inserted by this transaction has nothing in flight: no lock or check needed.
      claim = await flow.insertFirst(manager, first, requestId, provision, slot);
      deployment.latestRevisionId = first.id;
    } else {
      if (provision.length) await enqueueAllInOutbox(manager, provision);
      claim = await runRider(manager, slot);
    }
    quotas.slots.settle(workspaceId, claim, resourceSpec);
    // Answered from what this transaction wrote: the insert returned the row's defaults (its
    // timestamps are the transaction's now(), as is the latest-revision update's), a new
    // deployment has no tags, and its latest revision's config is `revisionConfig`.
    return presentDeployment(
      deployment,
      revisionConfig && { sourceRevisionConfig: revisionConfig },
      secrets.map((s) => s.name),
      [],
      this.deps.urls,
      this.deps.sourceNames,
    );
  }
}
