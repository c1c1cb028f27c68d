import Joi from 'joi';
import { ApiKeyRepository, TenancyRepository, type DataSource } from '@slipway/db';
import { hashApiKey } from '@slipway/crypto';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '@slipway/domain';
import type { Logger } from '@slipway/logging';
import { RequestValidationError, issuesFromJoi } from '../http/validation-error.js';
import { looksLikeJwt, type JwtVerifier } from './jwt-verifier.js';
import type { AuthRequirement, Principal } from './principal.js';

export const ORG_SCOPED_NEEDS_TENANT =
  "This API key is org-scoped and requires workspace specification. Please provide 'X-Tenant-Id' header.";
export const ADMIN_ONLY = 'This operation requires an admin API key.';
export const LISTENER_KEY_REFUSED = "This API key belongs to a listener agent and can only call the listener agent endpoints.";
export const AGENT_ONLY = "Only a listener agent's API key can call this endpoint.";

const tenantHeader = Joi.string().guid().label('x-tenant-id');

/** A verified credential, plus the tenant a JWT names in its `tenant_id` claim. */
interface Identity {
  principal: Principal;
  claimedTenant?: string;
}

type Headers = Record<string, string | string[] | undefined>;

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/** The credential a request carries: `X-Api-Key`, else `Authorization: Bearer`. */
function credentialOf(headers: Headers): string | undefined {
  const apiKey = single(headers['x-api-key'])?.trim();
  if (apiKey) return apiKey;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(single(headers.authorization) ?? '');
  return match?.[1];
}

/**
 * Turns request headers into a Principal (CONTRACT C3), or throws the exact 401/403/404/422 the
 * contract prescribes. Never says whether a key exists: every bad credential is the same 401.
 */
export class Authenticator {
  constructor(
    private readonly dataSource: DataSource,
    private readonly jwt: JwtVerifier | null,
    private readonly log: Logger,
  ) {}

  async authenticate(headers: Headers, requirement: Exclude<AuthRequirement, 'none'>, adminOnly = false): Promise<Principal> {
    const credential = credentialOf(headers);
    if (!credential) throw new UnauthorizedError();
    // A configured bootstrap key may happen to look like a JWT: fall back to the key lookup.
    const identity =
      (this.jwt && looksLikeJwt(credential) ? await this.fromJwt(credential) : null) ?? (await this.fromApiKey(credential));
    if (!identity) throw new UnauthorizedError();

    const { principal, claimedTenant } = identity;
    const header = single(headers['x-tenant-id'])?.trim();
    // A token issued for one workspace is bound to it, like a workspace-scoped key.
    if (claimedTenant && header && header !== claimedTenant) throw NotFoundError.of('Workspace', header);
    await this.resolveTenant(principal, header || claimedTenant);
    this.enforce(principal, requirement, adminOnly);
    return principal;
  }

  private async fromApiKey(key: string): Promise<Identity | null> {
    const repo = new ApiKeyRepository(this.dataSource.manager);
    const row = await repo.findActiveByHash(hashApiKey(key));
    if (!row) return null;
    // Bookkeeping must never fail the request it describes.
    repo.touch(row.id).catch((err) => this.log.warn({ err, keyId: row.id }, 'could not record API key use'));
    return {
      principal: {
        kind: 'api_key',
        keyId: row.id,
        subject: `api-key:${row.id}`,
        organizationId: row.organizationId,
        scope: row.scope,
        role: row.role,
        workspaceId: row.workspaceId,
        listenerId: row.listenerId,
      },
    };
  }

  private async fromJwt(token: string): Promise<Identity | null> {
    const claims = await this.jwt!.verify(token);
    if (!claims) return null;
    const exists = await this.dataSource.query('SELECT 1 FROM organizations WHERE id::text = $1', [claims.org_id]);
    if (!exists.length) return null;
    return {
      principal: {
        kind: 'jwt',
        keyId: null,
        subject: claims.sub,
        organizationId: claims.org_id,
        scope: 'organization',
        role: claims.role === 'admin' ? 'admin' : 'member',
        workspaceId: null,
        listenerId: null,
      },
      claimedTenant: claims.tenant_id,
    };
  }

  /**
   * Applies `X-Tenant-Id`. A workspace-scoped credential naming another workspace gets 404 for
   * it, never its data; an org-scoped one may name any workspace of its organization.
   */
  private async resolveTenant(principal: Principal, requested: string | undefined): Promise<void> {
    if (!requested) return;
    const { error, value } = tenantHeader.validate(requested);
    if (error) throw new RequestValidationError(issuesFromJoi(error, 'header').map((i) => ({ loc: ['header', 'x-tenant-id'], msg: i.msg, type: i.type })));

    if (principal.scope === 'workspace') {
      if (value !== principal.workspaceId) throw NotFoundError.of('Workspace', value);
      return;
    }
    const workspace = await new TenancyRepository(this.dataSource.manager).findWorkspace(value);
    if (!workspace || workspace.organizationId !== principal.organizationId) throw NotFoundError.of('Workspace', value);
    principal.workspaceId = workspace.id;
  }

  private enforce(principal: Principal, requirement: Exclude<AuthRequirement, 'none'>, adminOnly: boolean): void {
    if (requirement === 'listener-agent') {
      if (!principal.listenerId) throw new ForbiddenError(AGENT_ONLY);
      return;
    }
    if (principal.listenerId) throw new ForbiddenError(LISTENER_KEY_REFUSED);
    if (requirement === 'workspace' && !principal.workspaceId) throw new ForbiddenError(ORG_SCOPED_NEEDS_TENANT);
    if (adminOnly && principal.role !== 'admin') throw new ForbiddenError(ADMIN_ONLY);
  }
}
