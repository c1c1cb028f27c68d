import { isUuid } from '@slipway/domain';
import type { EntityManager } from 'typeorm';
import { OAuthProvider } from '../entities/index.js';

export const OAUTH_PROVIDER_ID_UNIQUE = 'oauth_providers_organization_provider_id_key';

export type OAuthProviderChanges = Partial<
  Pick<
    OAuthProvider,
    | 'name'
    | 'clientId'
    | 'clientSecretSealed'
    | 'authUrl'
    | 'tokenUrl'
    | 'usesPkce'
    | 'codeChallengeMethod'
    | 'providerType'
  >
>;

/** OAuth providers, always addressed within one organization. */
export class OAuthProviderRepository {
  constructor(private readonly manager: EntityManager) {}

  async insert(provider: OAuthProvider): Promise<OAuthProvider> {
    await this.manager.insert(OAuthProvider, provider);
    return (await this.manager.findOneBy(OAuthProvider, { id: provider.id }))!;
  }

  /**
   * Finds by the caller-chosen `provider_id`, or by the system `id` when `ref` is a UUID that
   * no provider uses as its `provider_id` (the path parameter is documented as either).
   */
  async findByRef(organizationId: string, ref: string): Promise<OAuthProvider | null> {
    const byProviderId = await this.manager.findOneBy(OAuthProvider, { organizationId, providerId: ref });
    if (byProviderId || !isUuid(ref)) return byProviderId;
    return this.manager.findOneBy(OAuthProvider, { organizationId, id: ref });
  }

  list(organizationId: string): Promise<OAuthProvider[]> {
    return this.manager.find(OAuthProvider, { where: { organizationId }, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  async update(organizationId: string, id: string, changes: OAuthProviderChanges): Promise<OAuthProvider | null> {
    const result = await this.manager
      .createQueryBuilder()
      .update(OAuthProvider)
      .set({ ...changes, updatedAt: () => 'now()' })
      .where('id = :id AND organization_id = :organizationId', { id, organizationId })
      .execute();
    return result.affected ? this.manager.findOneBy(OAuthProvider, { organizationId, id }) : null;
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    const result = await this.manager.delete(OAuthProvider, { organizationId, id });
    return (result.affected ?? 0) > 0;
  }
}
