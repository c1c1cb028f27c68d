import type { EntityManager } from 'typeorm';
import { Integration, WebhookDelivery, type IntegrationConfig, type IntegrationProvider } from '../entities/index.js';
import { queryRows } from '../sql.js';
import type { Page } from './pagination.js';

export const INTEGRATION_NAME_UNIQUE = 'integrations_workspace_name_key';
/** The FK a deployment insert trips when its integration was deleted meanwhile. */
export const DEPLOYMENT_INTEGRATION_FK = 'deployments_integration_id_fkey';

/** What a build needs of an integration to clone through it; the credentials still sealed (bound to `id`). */
export interface CloneIntegration {
  id: string;
  provider: IntegrationProvider;
  name: string;
  config: IntegrationConfig;
  credentialsSealed: string | null;
}

/** Integrations (always addressed within one workspace, except by their own webhook) and their deliveries. */
export class IntegrationRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Throws a unique violation on INTEGRATION_NAME_UNIQUE for a taken (workspace, name). */
  async insert(integration: Integration): Promise<Integration> {
    await this.manager.insert(Integration, integration);
    return (await this.find(integration.workspaceId, integration.id))!;
  }

  find(workspaceId: string, id: string): Promise<Integration | null> {
    return this.manager.findOneBy(Integration, { workspaceId, id });
  }

  /** Only for the push webhook, which has no workspace until its signature proves the caller. */
  findForWebhook(id: string): Promise<Integration | null> {
    return this.manager.findOneBy(Integration, { id });
  }

  /** Only for the builder, which reaches it through a deployment: its provider settings and sealed credentials, or null when gone. */
  async findForClone(id: string): Promise<CloneIntegration | null> {
    const [row] = await queryRows<{
      id: string;
      provider: IntegrationProvider;
      name: string;
      config: IntegrationConfig;
      credentials_sealed: string | null;
    }>(this.manager, `SELECT id, provider, name, config, credentials_sealed FROM integrations WHERE id = $1`, [id]);
    return row
      ? {
          id: row.id,
          provider: row.provider,
          name: row.name,
          config: row.config,
          credentialsSealed: row.credentials_sealed,
        }
      : null;
  }

  list(workspaceId: string, { limit, offset }: Page): Promise<Integration[]> {
    return this.manager.find(Integration, {
      where: { workspaceId },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
      skip: offset,
    });
  }

  /** Throws a foreign-key violation while deployments use it (deployments.integration_id is RESTRICT). */
  async delete(workspaceId: string, id: string): Promise<boolean> {
    const result = await this.manager.delete(Integration, { workspaceId, id });
    return (result.affected ?? 0) > 0;
  }

  // ---------------------------------------------------------------- deliveries

  /**
   * Records a delivery and reads it back (its clock_timestamp() receipt time). Null when it is
   * gone by then: its integration was deleted right after the insert, and its deliveries with it.
   */
  async insertDelivery(delivery: WebhookDelivery): Promise<WebhookDelivery | null> {
    await this.manager.insert(WebhookDelivery, delivery);
    return this.manager.findOneBy(WebhookDelivery, { id: delivery.id });
  }

  /**
   * Sets the outcome; `keepDigest` false forgets the payload digest, so the same payload may be
   * delivered again. Null when the delivery is gone (its integration was deleted meanwhile).
   */
  async finishDelivery(
    id: string,
    statusCode: number,
    outcome: string,
    keepDigest = true,
  ): Promise<WebhookDelivery | null> {
    await this.manager.update(
      WebhookDelivery,
      { id },
      { statusCode, outcome, ...(keepDigest ? {} : { payloadSha256: null }) },
    );
    return this.manager.findOneBy(WebhookDelivery, { id });
  }

  /** Records a revision a delivery created, in the transaction that created it. */
  async addDeliveryRevision(id: string, revisionId: string): Promise<void> {
    await this.manager.query(
      `UPDATE webhook_deliveries SET revision_ids = array_append(revision_ids, $2) WHERE id = $1`,
      [id, revisionId],
    );
  }

  listDeliveries(integrationId: string, { limit, offset }: Page): Promise<WebhookDelivery[]> {
    return this.manager.find(WebhookDelivery, {
      where: { integrationId },
      order: { receivedAt: 'DESC', id: 'DESC' },
      take: limit,
      skip: offset,
    });
  }
}
