import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { displayPrefix, generateApiKey, hashApiKey } from '@slipway/crypto';
import { ApiKey, Organization, Workspace } from '../entities/index.js';

export interface BootstrapResult {
  organizationId: string;
  workspaceId: string;
  /** The generated admin key, when this call made one; print it once and forget it. */
  generatedKey: string | null;
  /** True when SLIPWAY_BOOTSTRAP_API_KEY was registered by this call. */
  registeredConfiguredKey: boolean;
}

/** Organizations and workspaces. */
export class TenancyRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Whether the organization exists; any text may be asked (compared as text, so a malformed id is simply absent). */
  async organizationExists(id: string): Promise<boolean> {
    const rows = await this.manager.query('SELECT 1 FROM organizations WHERE id::text = $1', [id]);
    return rows.length > 0;
  }

  findWorkspace(id: string): Promise<Workspace | null> {
    return this.manager.findOneBy(Workspace, { id });
  }

  /** A page of an organization's workspaces, oldest first. */
  listWorkspaces(organizationId: string, page: { limit: number; offset: number }): Promise<Workspace[]> {
    return this.manager.find(Workspace, {
      where: { organizationId },
      order: { createdAt: 'ASC', id: 'ASC' },
      take: page.limit,
      skip: page.offset,
    });
  }

  async createOrganization(name: string): Promise<{ organization: Organization; workspace: Workspace }> {
    const organization = this.manager.create(Organization, { id: randomUUID(), name });
    await this.manager.insert(Organization, organization);
    const workspace = await this.createWorkspace(organization.id, 'default');
    return { organization, workspace };
  }

  async createWorkspace(organizationId: string, name: string): Promise<Workspace> {
    const workspace = this.manager.create(Workspace, { id: randomUUID(), organizationId, name });
    await this.manager.insert(Workspace, workspace);
    return workspace;
  }

  /**
   * Makes sure a fresh database has an organization, a workspace and an admin key. Runs under an
   * advisory lock, so several api processes starting at once bootstrap exactly once.
   * `configuredKey` (SLIPWAY_BOOTSTRAP_API_KEY) is registered as an admin key of the first
   * workspace whenever it is not known yet, so changing the variable takes effect on restart;
   * a revoked configured key stays revoked.
   */
  async bootstrap(configuredKey: string | null): Promise<BootstrapResult> {
    return this.manager.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('slipway.bootstrap'))`);
      let organization = await tx.findOne(Organization, { where: {}, order: { createdAt: 'ASC', id: 'ASC' } });
      let created = false;
      if (!organization) {
        organization = (await new TenancyRepository(tx).createOrganization('default')).organization;
        created = true;
      }
      const workspace = await tx.findOne(Workspace, {
        where: { organizationId: organization.id },
        order: { createdAt: 'ASC', id: 'ASC' },
      });
      if (!workspace) throw new Error(`Organization ${organization.id} has no workspace`);

      const result: BootstrapResult = {
        organizationId: organization.id,
        workspaceId: workspace.id,
        generatedKey: null,
        registeredConfiguredKey: false,
      };
      const base = {
        organizationId: organization.id,
        workspaceId: workspace.id,
        scope: 'workspace' as const,
        role: 'admin' as const,
      };
      if (configuredKey) {
        const hash = hashApiKey(configuredKey);
        if (!(await tx.existsBy(ApiKey, { keyHash: hash }))) {
          await tx.insert(ApiKey, {
            ...base,
            id: randomUUID(),
            description: 'bootstrap key (SLIPWAY_BOOTSTRAP_API_KEY)',
            prefix: displayPrefix(configuredKey),
            keyHash: hash,
          });
          result.registeredConfiguredKey = true;
        }
      } else if (created) {
        const generated = generateApiKey();
        await tx.insert(ApiKey, {
          ...base,
          id: randomUUID(),
          description: 'bootstrap key (generated at first start)',
          prefix: generated.prefix,
          keyHash: generated.hash,
        });
        result.generatedKey = generated.key;
      }
      return result;
    });
  }
}
