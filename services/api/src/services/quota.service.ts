import type { Config } from '@slipway/config';
import {
  QuotaRepository,
  RegistryRepository,
  TenancyRepository,
  type DataSource,
  type EntityManager,
} from '@slipway/db';
import type { Logger } from '@slipway/logging';
import {
  assertScaleWithin,
  NotFoundError,
  QUOTA_FIELDS,
  QuotaExceededError,
  type QuotaName,
  type Quotas,
  type ResourceSpec,
} from '@slipway/domain';
import { DeploymentSlots } from './deployment-slots.js';

/** `GET/PUT /v2/workspaces/{id}/quotas`: the quotas in force and which of them the workspace overrides. */
export interface QuotasView {
  workspace_id: string;
  quotas: Record<string, number>;
  overrides: Record<string, number>;
  /** What the workspace uses of the quotas that count bytes of images (registry_bytes). */
  usage: { registry_bytes: number; registry_stored_bytes: number; registry_unpacked_bytes: number };
}

const snake = (values: Partial<Quotas>) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [QUOTA_FIELDS[name as QuotaName], value])) as Record<
    string,
    number
  >;

/**
 * Per-workspace quotas (docs/operations.md, Quotas and retention): checked inside the write's
 * own transaction, with a slot row per deployment or under a lock on the workspace row where a
 * count decides, so racing writes cannot both take the last slot. A refused write answers 403 naming the quota and its value.
 */
export class QuotaService {
  /** The deployments quota, as slot rows a create claims. */
  readonly slots: DeploymentSlots;

  constructor(
    private readonly dataSource: DataSource,
    private readonly defaults: Config['quotas'],
    log: Logger,
  ) {
    this.slots = new DeploymentSlots(dataSource, defaults, log);
  }

  effective(manager: EntityManager, workspaceId: string): Promise<Quotas> {
    return new QuotaRepository(manager).effective(workspaceId, this.defaults);
  }

  /** The scale a resource_spec asks for is within the workspace's ceilings. */
  async assertScale(manager: EntityManager, workspaceId: string, spec: ResourceSpec): Promise<void> {
    assertScaleWithin(await this.effective(manager, workspaceId), spec);
  }

  /** Room for one more upload URL in the last 24 hours. */
  async assertUploadSlot(manager: EntityManager, workspaceId: string): Promise<void> {
    const repo = new QuotaRepository(manager);
    await repo.lockWorkspace(workspaceId);
    const { uploadsPerDay } = await this.effective(manager, workspaceId);
    if ((await repo.uploadsLastDay(workspaceId)) >= uploadsPerDay) {
      throw new QuotaExceededError(
        'uploadsPerDay',
        uploadsPerDay,
        `this workspace requested ${uploadsPerDay} upload URLs in the last 24 hours`,
      );
    }
  }

  /** Room for `incoming` more bytes of stored uploads. */
  async assertUploadBytes(manager: EntityManager, workspaceId: string, incoming: number): Promise<void> {
    const { uploadBytes } = await this.effective(manager, workspaceId);
    const stored = await new QuotaRepository(manager).uploadBytes(workspaceId);
    if (stored + incoming > uploadBytes) {
      throw new QuotaExceededError(
        'uploadBytes',
        uploadBytes,
        `this workspace stores ${stored} bytes of uploads and this one adds ${incoming}`,
      );
    }
  }

  /**
   * Room for more images: the workspace's registry blobs, and what its images unpacked to on the
   * deployer's disk, are together below its `registry_bytes` quota.
   */
  async assertRegistryRoom(manager: EntityManager, workspaceId: string): Promise<void> {
    const { quotaBytes, usedBytes } = await new RegistryRepository(manager).registryRoom(workspaceId, this.defaults);
    if (usedBytes >= quotaBytes) {
      throw new QuotaExceededError(
        'registryBytes',
        quotaBytes,
        `this workspace's images take ${usedBytes} bytes (stored in the registry and unpacked on the deployer)`,
      );
    }
  }

  /** The workspace must be of the caller's organization (and, for a workspace-scoped caller, its own). */
  private async assertVisible(
    organizationId: string,
    workspaceId: string,
    ownWorkspaceId: string | null,
  ): Promise<void> {
    const workspace = await new TenancyRepository(this.dataSource.manager).findWorkspace(workspaceId);
    if (
      !workspace ||
      workspace.organizationId !== organizationId ||
      (ownWorkspaceId !== null && ownWorkspaceId !== workspaceId)
    ) {
      throw NotFoundError.of('Workspace', workspaceId);
    }
  }

  async view(organizationId: string, workspaceId: string, ownWorkspaceId: string | null = null): Promise<QuotasView> {
    await this.assertVisible(organizationId, workspaceId, ownWorkspaceId);
    const manager = this.dataSource.manager;
    const overrides = await new QuotaRepository(manager).overrides(workspaceId);
    const { storedBytes, unpackedBytes } = await new RegistryRepository(manager).workspaceUsage(workspaceId);
    return {
      workspace_id: workspaceId,
      quotas: snake({ ...this.defaults, ...overrides }),
      overrides: snake(overrides),
      usage: {
        registry_bytes: storedBytes + unpackedBytes,
        registry_stored_bytes: storedBytes,
        registry_unpacked_bytes: unpackedBytes,
      },
    };
  }

  /** Sets the given overrides (null: back to the default); quotas not named keep theirs. */
  async update(organizationId: string, workspaceId: string, body: Record<string, number | null>): Promise<QuotasView> {
    await this.assertVisible(organizationId, workspaceId, null);
    const repo = new QuotaRepository(this.dataSource.manager);
    const current = await repo.overrides(workspaceId);
    const next: { [N in QuotaName]?: number | null } = { ...current };
    for (const [name, field] of Object.entries(QUOTA_FIELDS) as Array<[QuotaName, string]>) {
      if (field in body) next[name] = body[field] ?? null;
    }
    await repo.setOverrides(workspaceId, next);
    return this.view(organizationId, workspaceId);
  }
}
