import { ApiKey, ApiKeyRepository, issueApiKey, ListenerRepository, type DataSource } from '@slipway/db';
import { BadRequestError, ForbiddenError, NotFoundError } from '@slipway/domain';
import type { ApiKeyCache } from '@slipway/access';
import type { Principal } from '../auth/principal.js';
import { iso } from '../schemas/common.schema.js';
import type { CreateApiKeyBody } from '../schemas/api-key.schema.js';

export function presentApiKey(k: ApiKey) {
  return {
    id: k.id,
    prefix: k.prefix,
    description: k.description,
    scope: k.scope,
    role: k.role,
    organization_id: k.organizationId,
    tenant_id: k.workspaceId,
    listener_id: k.listenerId,
    created_at: iso(k.createdAt)!,
    last_used_at: iso(k.lastUsedAt),
  };
}

export type ApiKeyView = ReturnType<typeof presentApiKey>;

/**
 * Key management over the API (docs/api.md, Authentication and tenancy). Visibility follows the caller's scope: a
 * workspace admin sees and mints keys of its workspace only; minting an organization-scoped
 * key needs an organization-scoped admin, so no key can grant more than its maker holds.
 */
export class ApiKeyService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly cache: ApiKeyCache,
  ) {}

  async create(caller: Principal, body: CreateApiKeyBody): Promise<ApiKeyView & { key: string }> {
    if (body.scope === 'organization') {
      if (caller.scope !== 'organization') {
        throw new ForbiddenError('Only an organization-scoped admin key can create organization-scoped keys.');
      }
      if (body.listener_id) throw new BadRequestError('A listener agent key must be workspace-scoped.');
    } else if (!caller.workspaceId) {
      throw new ForbiddenError(
        "This API key is org-scoped and requires workspace specification. Please provide 'X-Tenant-Id' header.",
      );
    }
    const workspaceId = body.scope === 'workspace' ? caller.workspaceId : null;
    if (
      body.listener_id &&
      !(await new ListenerRepository(this.dataSource.manager).find(workspaceId!, body.listener_id))
    ) {
      throw NotFoundError.of('Listener', body.listener_id);
    }
    const { row, key } = await issueApiKey(this.dataSource.manager, {
      organizationId: caller.organizationId,
      workspaceId,
      listenerId: body.listener_id ?? null,
      scope: body.scope,
      role: body.listener_id ? 'member' : body.role,
      description: body.description,
    });
    return { ...presentApiKey(row), key };
  }

  async list(caller: Principal): Promise<ApiKeyView[]> {
    return (await this.repo().list(this.visibleTo(caller))).map(presentApiKey);
  }

  async revoke(caller: Principal, id: string): Promise<void> {
    const repo = this.repo();
    const key = await repo.findActive(id, this.visibleTo(caller));
    if (!key || !(await repo.revoke(key.id))) throw NotFoundError.of('API key', id);
    this.cache.forget(key.id);
  }

  private repo(): ApiKeyRepository {
    return new ApiKeyRepository(this.dataSource.manager);
  }

  /** Workspace-scoped callers see their workspace's keys; org-scoped ones the organization's. */
  private visibleTo(caller: Principal) {
    return {
      organizationId: caller.organizationId,
      workspaceId: caller.scope === 'workspace' ? caller.workspaceId : null,
    };
  }
}
