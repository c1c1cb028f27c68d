import { randomUUID } from 'node:crypto';
import type { SecretsCodec } from '@slipway/crypto';
import {
  isUniqueViolation,
  OAUTH_PROVIDER_ID_UNIQUE,
  OAuthProvider,
  OAuthProviderRepository,
  type DataSource,
  type OAuthProviderChanges,
} from '@slipway/db';
import { ConflictError, NotFoundError } from '@slipway/domain';
import { iso } from '../schemas/common.schema.js';
import type { CreateOAuthProviderBody, PatchOAuthProviderBody } from '../schemas/oauth-provider.schema.js';

/** The API shape of a provider. `client_secret` is deliberately not part of it. */
export function presentOAuthProvider(p: OAuthProvider) {
  return {
    id: p.id,
    organization_id: p.organizationId,
    provider_id: p.providerId,
    name: p.name,
    client_id: p.clientId,
    auth_url: p.authUrl,
    token_url: p.tokenUrl,
    uses_pkce: p.usesPkce,
    code_challenge_method: p.codeChallengeMethod,
    provider_type: p.providerType,
    created_at: iso(p.createdAt)!,
    updated_at: iso(p.updatedAt)!,
  };
}

export type OAuthProviderView = ReturnType<typeof presentOAuthProvider>;

/**
 * OAuth providers of the auth sub-service (docs/api.md, OAuth providers). The client secret is sealed with the
 * row id as context before it reaches the repository, and is only ever opened by the auth flow.
 */
export class OAuthProviderService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
  ) {}

  private repo(): OAuthProviderRepository {
    return new OAuthProviderRepository(this.dataSource.manager);
  }

  async list(organizationId: string): Promise<OAuthProviderView[]> {
    return (await this.repo().list(organizationId)).map(presentOAuthProvider);
  }

  async create(organizationId: string, body: CreateOAuthProviderBody): Promise<OAuthProviderView> {
    const id = randomUUID();
    const provider = Object.assign(new OAuthProvider(), {
      id,
      organizationId,
      providerId: body.provider_id,
      name: body.name,
      clientId: body.client_id,
      clientSecretSealed: this.secrets.seal(body.client_secret, id),
      authUrl: body.auth_url,
      tokenUrl: body.token_url,
      usesPkce: body.uses_pkce,
      codeChallengeMethod: body.code_challenge_method,
      providerType: body.provider_type ?? null,
    });
    try {
      return presentOAuthProvider(await this.repo().insert(provider));
    } catch (err) {
      if (isUniqueViolation(err, OAUTH_PROVIDER_ID_UNIQUE)) {
        throw new ConflictError(`OAuth provider with provider ID '${body.provider_id}' already exists.`);
      }
      throw err;
    }
  }

  async get(organizationId: string, ref: string): Promise<OAuthProviderView> {
    return presentOAuthProvider(await this.load(organizationId, ref));
  }

  async patch(organizationId: string, ref: string, body: PatchOAuthProviderBody): Promise<OAuthProviderView> {
    const current = await this.load(organizationId, ref);
    const changes: OAuthProviderChanges = {};
    // null on a required field means "leave as is"; see patchOAuthProviderBody.
    if (body.name != null) changes.name = body.name;
    if (body.client_id != null) changes.clientId = body.client_id;
    if (body.client_secret != null) changes.clientSecretSealed = this.secrets.seal(body.client_secret, current.id);
    if (body.auth_url != null) changes.authUrl = body.auth_url;
    if (body.token_url != null) changes.tokenUrl = body.token_url;
    if (body.uses_pkce != null) changes.usesPkce = body.uses_pkce;
    if (body.code_challenge_method !== undefined) changes.codeChallengeMethod = body.code_challenge_method;
    if (body.provider_type !== undefined) changes.providerType = body.provider_type;
    if (!Object.keys(changes).length) return presentOAuthProvider(current);
    const updated = await this.repo().update(organizationId, current.id, changes);
    if (!updated) throw NotFoundError.of('OAuth provider', ref);
    return presentOAuthProvider(updated);
  }

  async delete(organizationId: string, ref: string): Promise<void> {
    const current = await this.load(organizationId, ref);
    if (!(await this.repo().delete(organizationId, current.id))) throw NotFoundError.of('OAuth provider', ref);
  }

  private async load(organizationId: string, ref: string): Promise<OAuthProvider> {
    const provider = await this.repo().findByRef(organizationId, ref);
    if (!provider) throw NotFoundError.of('OAuth provider', ref);
    return provider;
  }
}
