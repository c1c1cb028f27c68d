import { createHash } from 'node:crypto';
import {
  DeploymentRepository,
  PreviewRepository,
  type DataSource,
  type Deployment,
  type EntityManager,
  type PreviewRequest,
  type PreviewSettings,
} from '@slipway/db';
import { ConflictError, DEPLOYMENT_NAME_MAX, NotFoundError, UnprocessableError } from '@slipway/domain';
import { beginDeploymentDelete, RevisionRepository, type PreviewEndReason, type RevisionFlow } from '@slipway/pipeline';
import type { CreateDeploymentBody, PatchDeploymentBody } from '../schemas/deployment.schema.js';
import type { DeploymentService, DeploymentView } from './deployment.service.js';

/** A fork's pull request waiting for approval, as the API shows it. */
export interface PreviewRequestView {
  number: number;
  head_ref: string;
  head_sha: string;
  url: string | null;
  repository: string | null;
  fork_repository: string | null;
  received_at: string;
}
/** What opens (or moves) a preview: the pull request's head. */
export interface PreviewInput {
  ref: string;
  number?: number;
  head_sha?: string | null;
  url?: string | null;
  /** The forge's `owner/name` (a pull_request delivery): statuses and a comment go there. */
  repository?: string | null;
}

/** `base` with each override replacing the secret of its name, or added. */
function withOverrides(
  base: Array<{ name: string; value: string }>,
  overrides: Array<{ name: string; value: string }>,
) {
  const names = new Set(overrides.map((o) => o.name));
  return [...base.filter((s) => !names.has(s.name)), ...overrides];
}

/**
 * `<parent>-pr-<number>`; when that is longer than a name may be, or taken in the workspace, the
 * parent part is cut and a short hash of the parent's id added (the `preview` object is what
 * clients trust, never the name).
 */
export function previewName(parent: Pick<Deployment, 'id' | 'name'>, number: number, taken: boolean): string {
  const suffix = `-pr-${number}`;
  const plain = `${parent.name}${suffix}`;
  if (plain.length <= DEPLOYMENT_NAME_MAX && !taken) return plain;
  const hash = createHash('sha256').update(parent.id).digest('hex').slice(0, 4);
  return `${parent.name.slice(0, DEPLOYMENT_NAME_MAX - suffix.length - 5).replace(/-+$/, '')}-${hash}${suffix}`;
}

/**
 * Previews of a repohost deployment's pull requests (docs/api.md, Previews), driven through the
 * API (`POST/GET/DELETE /v2/deployments/{id}/previews`): each a deployment of its own, made as a
 * create would make it from the parent's source, build settings, secrets and resources (the
 * preview's overrides applied), with its own database, Redis prefix, tracing project and name at
 * the edge, counted against the workspace's quotas like any deployment.
 */
export class PreviewService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly deployments: DeploymentService,
    private readonly flow: RevisionFlow,
  ) {}

  /** Opens the pull request's preview, or rolls its existing one out at the new head (`created` false). */
  async open(
    workspaceId: string,
    parentId: string,
    input: PreviewInput,
    requestId?: string,
  ): Promise<{ view: DeploymentView; created: boolean }> {
    const parent = await this.parent(this.dataSource.manager, workspaceId, parentId);
    const settings = parent.sourceConfig.previews!;
    const repo = new PreviewRepository(this.dataSource.manager);
    const number = input.number ?? (await repo.nextNumber(parent.id));
    const record = {
      pull_request: { number, head_ref: input.ref, head_sha: input.head_sha ?? null, url: input.url ?? null },
      repository: input.repository ?? null,
    };
    const existing = await repo.byNumber(parent.id, number);
    if (existing?.deleting)
      throw new ConflictError(`The preview of pull request ${number} is being deleted; open it again once it is gone.`);
    if (existing) {
      const view = await this.dataSource.transaction(async (m) => {
        // The pull request's head commit when known (else the branch's current head, which the builder records).
        const revision = { repo_ref: input.ref, repo_commit_sha: input.head_sha ?? null };
        await this.deployments.patch(
          m,
          workspaceId,
          existing.id,
          { source_revision_config: revision } as PatchDeploymentBody,
          requestId,
          'preview',
        );
        await new DeploymentRepository(m).markPreview(existing.id, parent.id, record, settings.ttl_hours);
        return this.deployments.get(workspaceId, existing.id, m);
      });
      return { view, created: false };
    }
    const body = await this.previewBody(parent, settings, number, input);
    const draft = await this.deployments.prepareCreate(workspaceId, body);
    const view = await this.deployments.withDeploymentSlot(workspaceId, () =>
      this.dataSource.transaction(async (m) => {
        await this.makeRoom(m, parent.id, settings.max_active, requestId);
        const made = await this.deployments.create(m, workspaceId, body, draft, requestId, 'preview');
        await new DeploymentRepository(m).markPreview(made.id, parent.id, record, settings.ttl_hours);
        return this.deployments.get(workspaceId, made.id, m);
      }),
    );
    return { view, created: true };
  }

  /** A fork's pull request waits for an admin: recorded (a new head replaces the one waiting), nothing built. */
  async awaitApproval(workspaceId: string, parentId: string, request: PreviewRequest): Promise<void> {
    await this.parent(this.dataSource.manager, workspaceId, parentId);
    await new PreviewRepository(this.dataSource.manager).requestApproval(parentId, request);
  }

  /** The parent's approval label came off the pull request: adding it again approves the head that waits. */
  async approvalLabelRemoved(workspaceId: string, parentId: string, number: number): Promise<void> {
    await this.parent(this.dataSource.manager, workspaceId, parentId);
    await new PreviewRepository(this.dataSource.manager).labelRemoved(parentId, number);
  }

  /**
   * An admin (or the approval label) approves the fork's head waiting for it: its preview opens (or
   * rolls out) at that commit. With `match.headSha`, only if that is the head waiting: a label
   * added before a newer push approves nothing newer; with `match.unlabeled`, only if the approval
   * label was off when that head arrived (a label left on approves no later head).
   */
  async approve(
    workspaceId: string,
    parentId: string,
    number: number,
    requestId?: string,
    match: { headSha?: string; unlabeled?: boolean } = {},
  ): Promise<{ view: DeploymentView; created: boolean }> {
    await this.parent(this.dataSource.manager, workspaceId, parentId);
    const request = await new PreviewRepository(this.dataSource.manager).takeRequest(parentId, number, match);
    if (!request)
      throw new NotFoundError(
        `No pull request ${number} of deployment ${parentId} is waiting for approval` +
          `${match.headSha ? ` at ${match.headSha}` : ''}${match.unlabeled ? ' since the label was added' : ''}.`,
      );
    try {
      return await this.open(
        workspaceId,
        parentId,
        { ref: request.headRef, number, head_sha: request.headSha, url: request.url, repository: request.repository },
        requestId,
      );
    } catch (err) {
      // Not opened: still waiting, as before.
      await new PreviewRepository(this.dataSource.manager).requestApproval(parentId, request);
      throw err;
    }
  }

  /** The forks' pull requests waiting for an admin's approve (or the approval label), newest first. */
  async waiting(workspaceId: string, parentId: string): Promise<PreviewRequestView[]> {
    await this.deployments.assertExists(workspaceId, parentId);
    return (await new PreviewRepository(this.dataSource.manager).waiting(parentId)).map((r) => ({
      number: r.number,
      head_ref: r.headRef,
      head_sha: r.headSha,
      url: r.url,
      repository: r.repository,
      fork_repository: r.forkRepository,
      received_at: r.receivedAt.toISOString(),
    }));
  }

  async list(workspaceId: string, parentId: string): Promise<DeploymentView[]> {
    await this.deployments.assertExists(workspaceId, parentId);
    return this.deployments.list(workspaceId, { limit: 100, offset: 0, preview_of: parentId });
  }

  /**
   * Starts the delete of the pull request's preview (its `preview.deleted` event says why: `api`, or `closed` for a
   * closed pull request).
   */
  async close(
    workspaceId: string,
    parentId: string,
    number: number,
    requestId?: string,
    reason: PreviewEndReason = 'api',
  ): Promise<void> {
    await this.deployments.assertExists(workspaceId, parentId);
    await this.dataSource.transaction(async (m) => {
      const waiting = await new PreviewRepository(m).takeRequest(parentId, number);
      const found = await new PreviewRepository(m).byNumber(parentId, number);
      if (!found && waiting) return;
      if (!found) throw new NotFoundError(`No preview of pull request ${number} for deployment ${parentId}.`);
      await this.deployments.lock(m, workspaceId, found.id);
      await beginDeploymentDelete(m, this.flow, found.id, { requestId, previewReason: reason });
    });
  }

  private async parent(m: EntityManager, workspaceId: string, id: string): Promise<Deployment> {
    const parent = await new DeploymentRepository(m).find(workspaceId, id);
    if (!parent) throw NotFoundError.of('Deployment', id);
    if (parent.previewOf) throw new UnprocessableError('A preview has no previews of its own.');
    if (parent.status === 'AWAITING_DELETE') throw new ConflictError('The deployment is being deleted.');
    if (parent.source !== 'repohost' || !parent.sourceConfig.previews?.enabled) {
      throw new ConflictError(
        'Previews are not turned on for this deployment: set source_config.previews.enabled (repohost deployments only).',
      );
    }
    return parent;
  }

  /** Past `max_active`, the least recently active previews go first (their events say `max_active`). */
  private async makeRoom(m: EntityManager, parentId: string, maxActive: number, requestId?: string): Promise<void> {
    const active = await new PreviewRepository(m).active(parentId);
    for (const preview of active.slice(0, Math.max(0, active.length - maxActive + 1))) {
      await beginDeploymentDelete(m, this.flow, preview.id, { requestId, previewReason: 'max_active' });
    }
  }

  /** The create body of a preview: the parent's source, build, secrets and resources (overrides applied), at the pull request's head. */
  private async previewBody(
    parent: Deployment,
    settings: PreviewSettings,
    number: number,
    input: PreviewInput,
  ): Promise<CreateDeploymentBody> {
    const latest = parent.latestRevisionId
      ? await new RevisionRepository(this.dataSource.manager).find(parent.id, parent.latestRevisionId)
      : null;
    const taken = await new PreviewRepository(this.dataSource.manager).nameTaken(
      parent.workspaceId,
      `${parent.name}-pr-${number}`,
    );
    const c = parent.sourceConfig;
    return {
      name: previewName(parent, number, taken),
      source: 'repohost',
      source_config: {
        integration_id: c.integration_id,
        repo_url: c.repo_url,
        install_command: c.install_command ?? null,
        build_command: c.build_command ?? null,
        serving_auth: c.serving_auth ?? null,
        tracing: c.tracing ?? null,
        deployment_type: parent.deploymentType,
        resource_spec: { ...parent.resourceSpec, ...(settings.resource_spec ?? {}) },
      },
      source_revision_config: {
        repo_ref: input.ref,
        repo_commit_sha: input.head_sha ?? null,
        graph_config_path: latest?.sourceRevisionConfig.graph_config_path ?? null,
      },
      // The parent's secrets, then its preview overrides (by name).
      secrets: withOverrides(
        this.deployments.openSecrets(parent.secretsSealed, parent.id),
        this.deployments.previewOverrides(parent),
      ),
    } as CreateDeploymentBody;
  }
}
