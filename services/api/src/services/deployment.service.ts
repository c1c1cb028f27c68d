import { randomUUID } from 'node:crypto';
import type { SecretBox } from '@slipway/crypto';
import {
  Deployment,
  DEPLOYMENT_NAME_UNIQUE,
  DeploymentRepository,
  DEPLOYMENT_INTEGRATION_FK,
  isForeignKeyViolation,
  isUniqueViolation,
  ListenerRepository,
  queryRows,
  Revision,
  RevisionRepository,
  transitionDeployment,
  type DataSource,
  type EntityManager,
  type PresentableDeployment,
  type StoredRevisionConfig,
  type StoredSourceConfig,
} from '@slipway/db';
import {
  BadRequestError,
  canonicalSource,
  capResourceSpec,
  ConflictError,
  IMMUTABLE_SOURCE_CONFIG_FIELDS,
  isSelfHosted,
  mergeSecrets,
  NotFoundError,
  patchCreatesRevision,
  resolveResourceSpec,
  resourceSpecProblems,
  SECRET_MASK,
  type DeploymentSource,
  type DeploymentType,
  type ResourceCeilings,
  type ResourceSpec,
  type ResourceSpecInput,
  type SecretEntry,
} from '@slipway/domain';
import { enqueueInOutbox, type RevisionFlow } from '@slipway/jobs';
import { RequestValidationError, type ValidationIssue } from '../http/validation-error.js';
import { iso } from '../schemas/common.schema.js';
import type {
  CreateDeploymentBody,
  ListDeploymentsQuery,
  PatchDeploymentBody,
  SourceConfigInput,
  SourceRevisionConfigInput,
} from '../schemas/deployment.schema.js';
import type { QuotaService } from './quota.service.js';
import { assertUploadCompleted } from './upload.service.js';

const DEFAULT_GRAPH_CONFIG_PATH = 'langgraph.json';

/**
 * The API shape of a deployment (docs/api.md, Deployments). Secret values never leave: they are masked.
 * A cloud-hosted deployment's `url` is where the process runtime serves it (`runtimeHost` and
 * its serving port); its `custom_url` shows that same URL until the user sets one of their own.
 */
export function presentDeployment(d: Deployment, latest: Pick<Revision, 'sourceRevisionConfig'> | null, secretNames: string[], tagValueIds: string[], runtimeHost?: string) {
  const config = latest?.sourceRevisionConfig ?? {};
  const host = runtimeHost?.includes(':') ? `[${runtimeHost}]` : runtimeHost;
  const servingUrl = !isSelfHosted(d.source) && d.servingPort && host ? `http://${host}:${d.servingPort}` : null;
  return {
    id: d.id,
    name: d.name,
    source: d.source,
    source_config: {
      integration_id: d.sourceConfig.integration_id ?? null,
      repo_url: d.sourceConfig.repo_url ?? null,
      build_on_push: d.sourceConfig.build_on_push ?? null,
      custom_url: d.sourceConfig.custom_url ?? servingUrl,
      resource_spec: d.resourceSpec,
      listener_id: d.sourceConfig.listener_id ?? null,
      listener_config: d.sourceConfig.listener_config ?? null,
      install_command: d.sourceConfig.install_command ?? null,
      build_command: d.sourceConfig.build_command ?? null,
      deployment_type: d.deploymentType,
      serving_auth: d.sourceConfig.serving_auth ?? null,
    },
    source_revision_config: {
      repo_ref: config.repo_ref ?? null,
      graph_config_path: config.graph_config_path ?? null,
      image_uri: config.image_uri ?? null,
      repo_commit_sha: config.repo_commit_sha ?? null,
      source_tarball_path: config.source_tarball_path ?? null,
    },
    secrets: secretNames.map((name) => ({ name, value: SECRET_MASK })),
    status: d.status,
    deployment_type: d.deploymentType,
    latest_revision_id: d.latestRevisionId,
    active_revision_id: d.activeRevisionId,
    image_version: d.imageVersion,
    tenant_id: d.workspaceId,
    tracing_project_id: d.tracingProjectId,
    url: servingUrl ?? d.sourceConfig.custom_url ?? null,
    tag_value_ids: tagValueIds,
    created_at: iso(d.createdAt)!,
    updated_at: iso(d.updatedAt)!,
  };
}

export type DeploymentView = ReturnType<typeof presentDeployment>;

/** What a new revision is made of; everything is snapshotted so the revision never changes. */
interface RevisionDraft {
  source: DeploymentSource;
  sourceRevisionConfig: StoredRevisionConfig;
  resourceSpec: ResourceSpec;
  secrets: SecretEntry[];
  buildConfig: { install_command: string | null; build_command: string | null };
  redeployedFrom?: string | null;
  artifactRef?: string | null;
  imageUri?: string | null;
}

/** The build settings a new revision snapshots from its deployment's source_config. */
const buildConfigOf = (sc: StoredSourceConfig) => ({ install_command: sc.install_command ?? null, build_command: sc.build_command ?? null });

const issue = (loc: Array<string | number>, type: string, msg: string): ValidationIssue => ({ loc: ['body', ...loc], msg, type });

function revisionConfigFrom(input: SourceRevisionConfigInput, base: StoredRevisionConfig = {}): StoredRevisionConfig {
  const graph = input.graph_config_path ?? input.langgraph_config_path;
  const merged: StoredRevisionConfig = { ...base };
  // A new ref or image means the commit must be resolved again, unless the caller pins one.
  if (input.repo_ref != null || input.source_tarball_path != null) merged.repo_commit_sha = null;
  if (input.repo_ref != null) merged.repo_ref = input.repo_ref;
  if (graph != null) merged.graph_config_path = graph;
  if (input.image_uri != null) merged.image_uri = input.image_uri;
  if (input.repo_commit_sha != null) merged.repo_commit_sha = input.repo_commit_sha;
  if (input.source_tarball_path != null) merged.source_tarball_path = input.source_tarball_path;
  return merged;
}

/**
 * Where create finds a repohost deployment's repository (C4): the integration must be one of
 * the workspace's (else 404) and list `repoUrl` (else 400). IntegrationService in the app.
 */
export interface RepositoryCatalog {
  findRepository(workspaceId: string, integrationId: string, repoUrl: string): Promise<{ default_branch: string }>;
}

/** A create request checked outside any transaction (`prepareCreate`), ready to be written. */
export interface CreateDraft {
  source: DeploymentSource;
  type: DeploymentType | null;
  resourceSpec: ResourceSpec;
  revisionConfig: StoredRevisionConfig | null;
  sourceConfig: StoredSourceConfig;
}

/**
 * Deployments (docs/api.md, Deployments): create, read, list, update, delete. Every write is one
 * transaction holding the deployment row lock, and hands work to the pipeline only through
 * the outbox, so a failure leaves nothing half-written and a Redis outage loses nothing.
 */
export class DeploymentService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly flow: RevisionFlow,
    private readonly repositories: RepositoryCatalog,
    private readonly quotas: QuotaService,
    private readonly ceilings: ResourceCeilings,
    /** The host in cloud-hosted deployments' serving URLs (`config.runtime.publicHost`). */
    private readonly runtimeHost?: string,
  ) {}

  // ---------------------------------------------------------------- reads

  async get(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager): Promise<DeploymentView> {
    const row = await new DeploymentRepository(manager).findPresentable(workspaceId, id);
    if (!row) throw NotFoundError.of('Deployment', id);
    return this.presentRow(row);
  }

  async list(workspaceId: string, query: ListDeploymentsQuery): Promise<DeploymentView[]> {
    const rows = await new DeploymentRepository(this.dataSource.manager).list(
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
      },
      query,
    );
    return rows.map((row) => this.presentRow(row));
  }

  /** Whether the deployment exists in the workspace (a 404 otherwise), without presenting it. */
  async assertExists(workspaceId: string, id: string): Promise<void> {
    if (!(await new DeploymentRepository(this.dataSource.manager).exists(workspaceId, id))) throw NotFoundError.of('Deployment', id);
  }

  /** Loads a deployment of the workspace with its row locked for the rest of the transaction. */
  async lock(manager: EntityManager, workspaceId: string, id: string): Promise<Deployment> {
    const [row] = await manager.query(`SELECT id FROM deployments WHERE id = $1 AND workspace_id = $2 FOR UPDATE`, [id, workspaceId]);
    const deployment = row && (await new DeploymentRepository(manager).find(workspaceId, id));
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
    const issues: ValidationIssue[] = [];
    const type = this.deploymentTypeFor(source, body, issues);
    const resourceSpec = this.resolveSpec(body.source_config.resource_spec ?? {}, type, ['source_config', 'resource_spec'], issues);
    const revisionConfig = this.validateCreate(source, body, issues);
    if (issues.length) throw new RequestValidationError(issues);
    const sourceConfig = this.storedSourceConfig(body.source_config);
    // ---- repohost (C4): the integration lists the repository; repo_ref defaults to its default branch.
    if (source === 'repohost') {
      const repository = await this.repositories.findRepository(workspaceId, sourceConfig.integration_id!, sourceConfig.repo_url!);
      if (revisionConfig && revisionConfig.repo_ref == null) revisionConfig.repo_ref = repository.default_branch;
    }
    return { source, type, resourceSpec, revisionConfig, sourceConfig };
  }

  /** Writes a deployment `prepareCreate` checked, in the caller's transaction. */
  async create(manager: EntityManager, workspaceId: string, body: CreateDeploymentBody, draft: CreateDraft, requestId?: string): Promise<DeploymentView> {
    const { source, type, resourceSpec, revisionConfig, sourceConfig } = draft;
    // Nothing is stored yet, so a masked value has nothing to keep (e.g. a GET body re-posted).
    const secrets = this.mergeSecrets([], body.secrets);

    const id = randomUUID();
    if (source === 'external_container') await this.checkListener(manager, workspaceId, sourceConfig);

    const tracingProjectId = await this.attachTracingProject(manager, workspaceId, body.name);
    const deployment: Deployment = Object.assign(new Deployment(), {
      id,
      workspaceId,
      name: body.name,
      source,
      status: 'AWAITING_DATABASE',
      deploymentType: type,
      tracingProjectId,
      listenerId: sourceConfig.listener_id ?? null,
      integrationId: source === 'repohost' ? sourceConfig.integration_id ?? null : null,
      sourceConfig,
      resourceSpec,
      secretsSealed: this.sealSecrets(secrets, id),
      imageVersion: body.image_version ?? null,
      latestRevisionId: null,
      activeRevisionId: null,
      databaseName: null,
    } satisfies Partial<Deployment>);
    try {
      await new DeploymentRepository(manager).insertLinkingTracingProject(deployment);
    } catch (err) {
      if (isUniqueViolation(err, DEPLOYMENT_NAME_UNIQUE)) throw this.nameTaken(body.name, workspaceId);
      // The integration was deleted after findRepository saw it.
      if (isForeignKeyViolation(err, DEPLOYMENT_INTEGRATION_FK)) throw NotFoundError.of('Integration', sourceConfig.integration_id!);
      throw err;
    }
    await enqueueInOutbox(manager, 'provision.deployment', { deploymentId: id, ...(requestId ? { requestId } : {}) });

    // An upload deployment has nothing to build until its tarball arrives (docs/api.md, Uploads and the deploy CLIs).
    if (revisionConfig) {
      deployment.latestRevisionId = await this.addRevision(manager, deployment, {
        source,
        sourceRevisionConfig: revisionConfig,
        resourceSpec,
        secrets,
        buildConfig: buildConfigOf(sourceConfig),
      }, requestId, true);
    }
    // Last: it locks the workspace until commit (see assertDeploymentSlot).
    await this.quotas.assertDeploymentSlot(manager, workspaceId, resourceSpec);
    // Answered from what this transaction wrote: the insert returned the row's defaults (its
    // timestamps are the transaction's now(), as is the latest-revision update's), a new
    // deployment has no tags, and its latest revision's config is `revisionConfig`.
    return presentDeployment(deployment, revisionConfig && { sourceRevisionConfig: revisionConfig }, secrets.map((s) => s.name), [], this.runtimeHost);
  }

  // ---------------------------------------------------------------- update

  /**
   * PATCH, or with `alwaysRevision` the `POST .../revisions` of docs/api.md, Deployments: the same body,
   * but a new revision is made even when no revision field changed.
   */
  async patch(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    body: PatchDeploymentBody,
    requestId?: string,
    alwaysRevision = false,
  ): Promise<DeploymentView> {
    const deployment = await this.lock(manager, workspaceId, id);
    if (deployment.status === 'AWAITING_DELETE') {
      throw new BadRequestError(`Deployment ID ${id} is being deleted and can no longer be changed.`);
    }
    this.assertImmutables(deployment, body);
    // The cross-source rule of create holds for later revisions too: only images carry an image_uri.
    if (!isSelfHosted(deployment.source) && body.source_revision_config?.image_uri != null) {
      throw new RequestValidationError([
        issue(['source_revision_config', 'image_uri'], 'value_error', 'Value error, image_uri is only for external_container deployments'),
      ]);
    }

    const input = body.source_config ?? {};
    const sourceConfig: StoredSourceConfig = { ...deployment.sourceConfig };
    for (const field of ['build_on_push', 'custom_url', 'install_command', 'build_command', 'serving_auth'] as const) {
      if (input[field] != null) (sourceConfig as Record<string, unknown>)[field] = input[field];
    }
    const specIssues: ValidationIssue[] = [];
    const resourceSpec =
      input.resource_spec != null
        ? this.resolveSpec(input.resource_spec, deployment.deploymentType, ['source_config', 'resource_spec'], specIssues)
        : deployment.resourceSpec;
    if (specIssues.length) throw new RequestValidationError(specIssues);
    if (input.resource_spec != null) await this.quotas.assertScale(manager, workspaceId, resourceSpec);

    let secrets = this.openSecrets(deployment.secretsSealed, deployment.id);
    if (body.secrets != null) secrets = this.mergeSecrets(secrets, body.secrets);

    await manager.query(
      `UPDATE deployments SET source_config = $2, resource_spec = $3, secrets_sealed = $4, image_version = $5,
              last_activity_at = now(), updated_at = now()
        WHERE id = $1`,
      [
        id,
        JSON.stringify(sourceConfig),
        JSON.stringify(resourceSpec),
        this.sealSecrets(secrets, id),
        body.image_version !== undefined && body.image_version !== null ? body.image_version : deployment.imageVersion,
      ],
    );

    const revisionInput = body.source_revision_config ?? {};
    const uploadRevision = body.revision_source != null && revisionInput.source_tarball_path != null;
    // Only a completed upload of this very deployment may be built (C10), never a guessed path.
    if (revisionInput.source_tarball_path != null) await assertUploadCompleted(manager, id, revisionInput.source_tarball_path);
    if (alwaysRevision || patchCreatesRevision(body) || uploadRevision) {
      const revisionConfig = await this.nextRevisionConfig(manager, deployment, revisionInput);
      this.assertBuildable(deployment.source, revisionConfig);
      await this.addRevision(manager, deployment, {
        source: deployment.source,
        sourceRevisionConfig: revisionConfig,
        resourceSpec,
        secrets,
        buildConfig: buildConfigOf(sourceConfig),
      }, requestId);
    }
    return this.get(workspaceId, id, manager);
  }

  // ---------------------------------------------------------------- delete

  /**
   * DELETE: AWAITING_DELETE, in-flight and waiting revisions INTERRUPTED, teardown enqueued.
   * The row disappears when teardown ends. Deleting again while that runs is a no-op.
   */
  async delete(manager: EntityManager, workspaceId: string, id: string, deleteTracingProject: boolean, requestId?: string): Promise<void> {
    const deployment = await this.lock(manager, workspaceId, id);
    if (deployment.status !== 'AWAITING_DELETE') {
      await transitionDeployment(manager, id, 'AWAITING_DELETE');
      const revisions = new RevisionRepository(manager);
      for (const revisionId of await revisions.openOfDeployment(id)) {
        await revisions.transition(revisionId, 'INTERRUPTED', { message: 'Deployment deleted.' });
      }
      await enqueueInOutbox(manager, 'teardown.deployment', { deploymentId: id, ...(requestId ? { requestId } : {}) });
    }
    if (deleteTracingProject && deployment.tracingProjectId) {
      await manager.query(`UPDATE deployments SET tracing_project_id = NULL WHERE id = $1`, [id]);
      await manager.query(`DELETE FROM tracing_projects WHERE id = $1`, [deployment.tracingProjectId]);
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
  async addRevision(manager: EntityManager, deployment: Deployment, draft: RevisionDraft, requestId?: string, firstOfNewDeployment = false): Promise<string> {
    const id = randomUUID();
    await new RevisionRepository(manager).insertAsLatest({
      id,
      deploymentId: deployment.id,
      source: draft.source,
      sourceRevisionConfig: draft.sourceRevisionConfig,
      imageUri: draft.imageUri ?? (draft.source === 'external_container' ? draft.sourceRevisionConfig.image_uri ?? null : null),
      artifactRef: draft.artifactRef ?? null,
      resourceSpec: draft.resourceSpec,
      secretsSealed: this.sealSecrets(draft.secrets, id),
      secretNames: draft.secrets.map((s) => s.name),
      buildConfig: draft.buildConfig,
      redeployedFrom: draft.redeployedFrom ?? null,
    });
    // A deployment inserted by this transaction has nothing in flight: no lock or check needed.
    if (firstOfNewDeployment) await this.flow.admitFirst(manager, id, requestId);
    else await this.flow.admit(manager, deployment.id, id, requestId);
    return id;
  }

  /**
   * Push webhook (C8): a revision building `branch` at `sha` from the latest revision's config
   * and the deployment's current resources, secrets and build settings. The caller holds the
   * deployment lock (`lock`) and has checked that the deployment builds this branch on push.
   */
  async addPushRevision(manager: EntityManager, deployment: Deployment, branch: string, sha: string, requestId?: string): Promise<string> {
    return this.addRevision(manager, deployment, {
      source: deployment.source,
      sourceRevisionConfig: await this.nextRevisionConfig(manager, deployment, { repo_ref: branch, repo_commit_sha: sha }),
      resourceSpec: deployment.resourceSpec,
      secrets: this.openSecrets(deployment.secretsSealed, deployment.id),
      buildConfig: buildConfigOf(deployment.sourceConfig),
    }, requestId);
  }

  /** A revision's secrets, opened (for redeploy, which re-seals them for the new revision). */
  revisionSecrets(revision: Revision): SecretEntry[] {
    return this.openSecrets(revision.secretsSealed, revision.id);
  }

  sealSecrets(secrets: readonly SecretEntry[], context: string): string | null {
    return secrets.length ? this.secrets.seal(JSON.stringify(secrets), context) : null;
  }

  openSecrets(sealed: string | null, context: string): SecretEntry[] {
    return sealed ? (JSON.parse(this.secrets.open(sealed, context)) as SecretEntry[]) : [];
  }

  // ---------------------------------------------------------------- helpers

  /** A new revision's config: the latest revision's (or the source's defaults), with `input` applied. */
  private async nextRevisionConfig(manager: EntityManager, deployment: Deployment, input: SourceRevisionConfigInput): Promise<StoredRevisionConfig> {
    const latest = deployment.latestRevisionId
      ? await new RevisionRepository(manager).find(deployment.id, deployment.latestRevisionId)
      : null;
    return revisionConfigFrom(input, latest?.sourceRevisionConfig ?? this.defaultRevisionConfig(deployment.source));
  }

  /** `incoming` applied to `stored` (C4): a masked value keeps the stored one; one with none to keep → 400. */
  private mergeSecrets(stored: SecretEntry[], incoming: SecretEntry[]): SecretEntry[] {
    const merged = mergeSecrets(stored, incoming);
    if (merged.unknownMasked.length) {
      throw new BadRequestError(
        `Secret ${merged.unknownMasked.join(', ')} has the masked value '${SECRET_MASK}' but no stored value to keep; send its real value.`,
      );
    }
    return merged.secrets;
  }

  private presentRow({ deployment: d, latestRevisionConfig, tagValueIds }: PresentableDeployment): DeploymentView {
    return presentDeployment(
      d,
      latestRevisionConfig && { sourceRevisionConfig: latestRevisionConfig },
      this.openSecrets(d.secretsSealed, d.id).map((s) => s.name),
      tagValueIds,
      this.runtimeHost,
    );
  }

  private deploymentTypeFor(source: DeploymentSource, body: CreateDeploymentBody, issues: ValidationIssue[]): DeploymentType | null {
    const given = (body.deployment_type ?? body.source_config.deployment_type ?? null) as DeploymentType | null;
    if (isSelfHosted(source)) {
      if (given !== null) {
        const loc = body.deployment_type != null ? ['deployment_type'] : ['source_config', 'deployment_type'];
        issues.push(issue(loc, 'value_error', 'Value error, deployment_type must be null for external_container deployments'));
      }
      return null;
    }
    return given ?? 'dev';
  }

  /** The spec with every default filled in (within the ceilings); its problems are added to `issues`. */
  private resolveSpec(input: Record<string, unknown>, type: DeploymentType | null, loc: string[], issues: ValidationIssue[]): ResourceSpec {
    const { spec, problems } = capResourceSpec(input, resolveResourceSpec(input as ResourceSpecInput, type), this.ceilings);
    for (const { field, message } of problems) issues.push(issue([...loc, field], 'less_than_equal', message));
    for (const [field, message] of resourceSpecProblems(spec)) issues.push(issue([...loc, field], 'value_error', `Value error, ${message}`));
    return spec;
  }

  /**
   * Per-source rules of docs/api.md, Deployments, added to `issues`; returns the first revision's config, or
   * null for none (meaningful only when no issue was found).
   */
  private validateCreate(source: DeploymentSource, body: CreateDeploymentBody, issues: ValidationIssue[]): StoredRevisionConfig | null {
    const sc = body.source_config;
    const src = body.source_revision_config;
    const required = (loc: string[], value: unknown, why: string) => {
      if (value == null || value === '') issues.push(issue(loc, 'missing', `Field required ${why}`));
    };
    const forbidden = (loc: string[], value: unknown, why: string) => {
      if (value != null) issues.push(issue(loc, 'value_error', `Value error, ${loc.at(-1)} ${why}`));
    };
    if (source === 'repohost') {
      required(['source_config', 'integration_id'], sc.integration_id, 'for repohost deployments');
      required(['source_config', 'repo_url'], sc.repo_url, 'for repohost deployments');
      forbidden(['source_config', 'listener_id'], sc.listener_id, 'is only for external_container deployments');
      forbidden(['source_revision_config', 'image_uri'], src.image_uri, 'is only for external_container deployments');
    } else if (source === 'external_container') {
      required(['source_revision_config', 'image_uri'], src.image_uri, 'for external_container deployments');
      required(['source_config', 'listener_id'], sc.listener_id, 'for external_container deployments');
      forbidden(['source_config', 'integration_id'], sc.integration_id, 'is only for repohost deployments');
      forbidden(['source_config', 'repo_url'], sc.repo_url, 'is only for repohost deployments');
    } else {
      // An upload deployment has neither an integration nor a repository (C4), nor a listener.
      forbidden(['source_config', 'listener_id'], sc.listener_id, 'is only for external_container deployments');
      forbidden(['source_config', 'integration_id'], sc.integration_id, 'is only for repohost deployments');
      forbidden(['source_config', 'repo_url'], sc.repo_url, 'is only for repohost deployments');
      forbidden(['source_revision_config', 'image_uri'], src.image_uri, 'is only for external_container deployments');
    }
    // An upload belongs to a deployment, so none can exist yet: a path here could only be guessed (C10).
    forbidden(['source_revision_config', 'source_tarball_path'], src.source_tarball_path, 'is set by a PATCH after uploading through POST /v2/deployments/{id}/upload-url');
    if (source === 'upload') return null;
    return revisionConfigFrom(src, this.defaultRevisionConfig(source));
  }

  private defaultRevisionConfig(source: DeploymentSource): StoredRevisionConfig {
    return source === 'external_container' ? {} : { graph_config_path: DEFAULT_GRAPH_CONFIG_PATH };
  }

  private assertBuildable(source: DeploymentSource, config: StoredRevisionConfig): void {
    if (source === 'external_container' && !config.image_uri) {
      throw new RequestValidationError([issue(['source_revision_config', 'image_uri'], 'missing', 'Field required for external_container deployments')]);
    }
    if (source === 'upload' && !config.source_tarball_path) {
      throw new BadRequestError('An upload deployment needs source_revision_config.source_tarball_path (from POST /v2/deployments/{id}/upload-url).');
    }
  }

  private storedSourceConfig(input: SourceConfigInput): StoredSourceConfig {
    const { resource_spec: _spec, deployment_type: _type, ...rest } = input;
    return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as StoredSourceConfig;
  }

  /** The listener must be of this workspace, and the namespace one it serves. */
  private async checkListener(manager: EntityManager, workspaceId: string, config: StoredSourceConfig): Promise<void> {
    const listener = await new ListenerRepository(manager).find(workspaceId, config.listener_id!);
    if (!listener) throw NotFoundError.of('Listener', config.listener_id!);
    const namespace = config.listener_config?.k8s_namespace;
    const allowed = listener.computeConfig.k8s_namespaces;
    if (namespace && allowed && !allowed.includes(namespace)) {
      throw new BadRequestError(
        `Namespace '${namespace}' is not one of listener ${listener.id}'s namespaces (${allowed.join(', ') || 'none'}).`,
      );
    }
  }

  /**
   * A tracing project of the same name: created, or re-attached when it survived a deleted
   * deployment. Locked, so two creates of one name cannot both attach it.
   */
  private async attachTracingProject(manager: EntityManager, workspaceId: string, name: string): Promise<string> {
    // The usual case, a new name, in one round trip. A concurrent create of the same name makes
    // this wait for its commit and then do nothing; the read below then sees its project taken.
    const id = randomUUID();
    const inserted = await queryRows(
      manager,
      `INSERT INTO tracing_projects (id, workspace_id, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id`,
      [id, workspaceId, name],
    );
    if (inserted.length) return id;
    const [existing] = await queryRows<{ id: string; deployment_id: string | null }>(
      manager,
      `SELECT id, deployment_id FROM tracing_projects WHERE workspace_id = $1 AND name = $2 FOR UPDATE`,
      [workspaceId, name],
    );
    // Gone again (a concurrent create rolled back): treat as taken rather than guess; a retry wins.
    if (!existing || existing.deployment_id) throw this.nameTaken(name, workspaceId);
    return existing.id;
  }

  private nameTaken(name: string, workspaceId: string): ConflictError {
    return new ConflictError(`A deployment or tracing project named '${name}' already exists in workspace ID '${workspaceId}'.`);
  }

  /** docs/api.md, Deployments: changing an immutable field is a 400 naming it; repeating its value is fine. */
  private assertImmutables(deployment: Deployment, body: PatchDeploymentBody): void {
    const changed = (field: string) => {
      throw new BadRequestError(`${field} cannot be changed after the deployment is created.`);
    };
    if (body.name != null && body.name !== deployment.name) changed('name');
    if (body.source != null && canonicalSource(body.source) !== deployment.source) changed('source');
    const input = body.source_config ?? {};
    for (const field of IMMUTABLE_SOURCE_CONFIG_FIELDS) {
      const given = input[field];
      if (given == null) continue;
      const stored = deployment.sourceConfig[field] ?? null;
      if (JSON.stringify(given) !== JSON.stringify(stored)) changed(`source_config.${field}`);
    }
    const type = body.deployment_type ?? input.deployment_type;
    if (type != null && type !== deployment.deploymentType) changed('deployment_type');
  }
}
