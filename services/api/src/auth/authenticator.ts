import Joi from 'joi';
import { TenancyRepository, type DataSource } from '@slipway/db';
import { hashApiKey } from '@slipway/crypto';
import { credentialOf, type ApiKeyCache } from '@slipway/access';
import { ForbiddenError, isUuid, NotFoundError, RequestValidationError, UnauthorizedError } from '@slipway/domain';
import { issuesFromJoi } from '../schemas/validation-error.js';
import { looksLikeJwt, type JwtVerifier } from './jwt-verifier.js';
import { isOrganizationAdmin, type AdminRequirement, type AuthRequirement, type Principal } from './principal.js';

export const ORG_SCOPED_NEEDS_TENANT =
  "This API key is org-scoped and requires workspace specification. Please provide 'X-Tenant-Id' header.";
export const ADMIN_ONLY = 'This operation requires an admin API key.';
export const ORGANIZATION_ADMIN_ONLY =
  'This operation requires an organization admin: an organization-scoped admin API key.';
export const tokenBoundElsewhere = (workspaceId: string) =>
  `This token is scoped to workspace ${workspaceId} and cannot act in another workspace.`;
export const LISTENER_KEY_REFUSED =
  'This API key belongs to a listener agent and can only call the listener agent endpoints.';
export const AGENT_ONLY = "Only a listener agent's API key can call this endpoint.";

const tenantHeader = Joi.string().guid().label('x-tenant-id');

type Headers = Record<string, string | string[] | undefined>;

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/**
 * Turns request headers into a Principal (docs/api.md, Authentication and tenancy), or throws the exact 401/403/404/422 the
 * contract prescribes. Never says whether a key exists: every bad credential is the same 401.
 */
export class Authenticator {
  constructor(
    private readonly dataSource: DataSource,
    private readonly jwt: JwtVerifier | null,
    private readonly apiKeys: ApiKeyCache,
  ) {}

  /** Who the credential belongs to; 401 for a missing or invalid one. */
  async identify(headers: Headers): Promise<Principal> {
    const credential = credentialOf(headers);
    if (!credential) throw new UnauthorizedError();
    // A configured bootstrap key may happen to look like a JWT: fall back to the key lookup.
    const principal =
      (this.jwt && looksLikeJwt(credential) ? await this.fromJwt(credential) : null) ??
      (await this.fromApiKey(credential));
    if (!principal) throw new UnauthorizedError();
    return principal;
  }

  /** Applies `X-Tenant-Id` to an identified caller and checks it may call a route of this kind. */
  async authorize(
    principal: Principal,
    headers: Headers,
    requirement: Exclude<AuthRequirement, 'none'>,
    admin: AdminRequirement = false,
  ): Promise<void> {
    await this.resolveTenant(principal, single(headers['x-tenant-id'])?.trim());
    this.enforce(principal, requirement, admin);
  }

  private async fromApiKey(key: string): Promise<Principal | null> {
    const row = await this.apiKeys.find(hashApiKey(key));
    if (!row) return null;
    this.apiKeys.touch(row.id);
    return {
      kind: 'api_key',
      keyId: row.id,
      subject: `api-key:${row.id}`,
      organizationId: row.organizationId,
      scope: row.scope,
      role: row.role,
      workspaceId: row.workspaceId,
      listenerId: row.listenerId,
      name: row.description ? row.description.slice(0, 200) : null,
    };
  }

  /**
   * A JWT with `tenant_id` is scoped to that workspace exactly as a workspace-scoped key is:
   * it acts there only, sees only that workspace's keys, and cannot mint organization-wide
   * ones. Without `tenant_id` it is organization-scoped. A `tenant_id` that is no workspace of
   * the token's organization is refused.
   */
  private async fromJwt(token: string): Promise<Principal | null> {
    const claims = await this.jwt!.verify(token);
    if (!claims) return null;
    const tenancy = new TenancyRepository(this.dataSource.manager);
    if (!(await tenancy.organizationExists(claims.org_id))) return null;
    const principal: Principal = {
      kind: 'jwt',
      keyId: null,
      subject: claims.sub,
      organizationId: claims.org_id,
      scope: 'organization',
      role: claims.role === 'admin' ? 'admin' : 'member',
      workspaceId: null,
      listenerId: null,
      name:
        (typeof claims.name === 'string' ? claims.name : typeof claims.email === 'string' ? claims.email : null)?.slice(
          0,
          200,
        ) ?? null,
    };
    if (claims.tenant_id === undefined) return principal;
    if (typeof claims.tenant_id !== 'string' || !isUuid(claims.tenant_id)) return null;
    const workspace = await tenancy.findWorkspace(claims.tenant_id);
    if (!workspace || workspace.organizationId !== principal.organizationId)
      throw NotFoundError.of('Workspace', claims.tenant_id);
    return { ...principal, scope: 'workspace', workspaceId: workspace.id };
  }

  /**
   * Applies `X-Tenant-Id`. A workspace-scoped key naming another workspace gets 404 for it,
   * never its data (docs/api.md, Authentication and tenancy); a workspace-bound JWT gets 403: the token says which workspace
   * it may act in, so refusing any other reveals nothing. An org-scoped credential may name any
   * workspace of its organization.
   */
  private async resolveTenant(principal: Principal, requested: string | undefined): Promise<void> {
    if (!requested) return;
    const { error, value } = tenantHeader.validate(requested);
    if (error)
      throw new RequestValidationError(
        issuesFromJoi(error, 'header').map((i) => ({ loc: ['header', 'x-tenant-id'], msg: i.msg, type: i.type })),
      );

    if (principal.scope === 'workspace') {
      if (value === principal.workspaceId) return;
      if (principal.kind === 'jwt') throw new ForbiddenError(tokenBoundElsewhere(principal.workspaceId!));
      throw NotFoundError.of('Workspace', value);
    }
    const workspace = await new TenancyRepository(this.dataSource.manager).findWorkspace(value);
    if (!workspace || workspace.organizationId !== principal.organizationId) throw NotFoundError.of('Workspace', value);
    principal.workspaceId = workspace.id;
  }

  private enforce(principal: Principal, requirement: Exclude<AuthRequirement, 'none'>, admin: AdminRequirement): void {
    if (requirement === 'listener-agent') {
      if (!principal.listenerId) throw new ForbiddenError(AGENT_ONLY);
      return;
    }
    if (principal.listenerId) throw new ForbiddenError(LISTENER_KEY_REFUSED);
    if (requirement === 'workspace' && !principal.workspaceId) throw new ForbiddenError(ORG_SCOPED_NEEDS_TENANT);
    if (admin === 'organization' && !isOrganizationAdmin(principal)) throw new ForbiddenError(ORGANIZATION_ADMIN_ONLY);
    if (admin && principal.role !== 'admin') throw new ForbiddenError(ADMIN_ONLY);
  }
}
