import { randomBytes, randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import {
  Integration,
  INTEGRATION_NAME_UNIQUE,
  IntegrationRepository,
  isForeignKeyViolation,
  isUniqueViolation,
  type DataSource,
  type EntityManager,
  type IntegrationConfig,
  type Page,
  type WebhookDelivery,
} from '@slipway/db';
import { BadGatewayError, BadRequestError, ConflictError, NotFoundError } from '@slipway/domain';
import {
  createRepohostProvider,
  isWithin,
  MAX_BRANCHES,
  normalizeRepoUrl,
  ProviderError,
  type ProviderSpec,
  type RepohostProvider,
  type RepositoryBranch,
  type RepositoryEntry,
} from '@slipway/source';
import { checkOutboundField } from './outbound-url.js';
import { iso } from '../schemas/common.schema.js';
import type { CreateIntegrationBody } from '../schemas/integration.schema.js';
import type { RepositoryCatalog } from './deployment.service.js';

/** Secrets a provider needs, sealed together into `credentials_sealed`. */
interface Credentials {
  token?: string;
  private_key?: string;
}

/** The API shape of an integration: its non-secret config only, never a token or key. */
export function presentIntegration(i: Integration, publicUrl: string) {
  const config: IntegrationConfig = {};
  for (const key of ['root', 'api_url', 'app_id', 'installation_id'] as const) {
    if (i.config[key] !== undefined) (config as Record<string, unknown>)[key] = i.config[key];
  }
  return {
    id: i.id,
    tenant_id: i.workspaceId,
    provider: i.provider,
    name: i.name,
    config,
    webhook_url: `${publicUrl}/v1/integrations/repohost/${i.id}/webhook`,
    created_at: iso(i.createdAt)!,
    updated_at: iso(i.updatedAt)!,
  };
}

export type IntegrationView = ReturnType<typeof presentIntegration>;

export function presentDelivery(d: WebhookDelivery) {
  return {
    id: d.id,
    integration_id: d.integrationId,
    delivery_id: d.deliveryId,
    event: d.event,
    ref: d.ref,
    signature_valid: d.signatureValid,
    status_code: d.statusCode,
    outcome: d.outcome,
    revision_ids: d.revisionIds,
    received_at: iso(d.receivedAt)!,
  };
}

export type DeliveryView = ReturnType<typeof presentDelivery>;

export interface IntegrationServiceOptions {
  /** Per request to GitHub/Gitea. */
  providerTimeoutMs?: number;
}

/**
 * Repository-host integrations (docs/api.md, Integrations). Credentials and the webhook secret are sealed
 * with the row id as context before they reach the repository; they are opened only to talk to
 * the host or to check a webhook signature, and never leave in a response.
 */
export class IntegrationService implements RepositoryCatalog {
  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
    private readonly config: Pick<Config, 'publicUrl' | 'localReposRoot' | 'outbound'>,
    private readonly options: IntegrationServiceOptions = {},
  ) {}

  private repo(manager: EntityManager = this.dataSource.manager): IntegrationRepository {
    return new IntegrationRepository(manager);
  }

  /** Creates an integration; the response is the only one that carries `webhook_secret`. */
  async create(
    workspaceId: string,
    body: CreateIntegrationBody,
  ): Promise<IntegrationView & { webhook_secret: string }> {
    const id = randomUUID();
    if (body.config.api_url !== undefined)
      await checkOutboundField(body.config.api_url, this.config.outbound, ['body', 'config', 'api_url']);
    const { config, credentials } = await this.split(body);
    const webhookSecret = `whsec_${randomBytes(32).toString('base64url')}`;
    const integration = Object.assign(new Integration(), {
      id,
      workspaceId,
      provider: body.provider,
      name: body.name,
      config,
      credentialsSealed: credentials ? this.secrets.sealJson(credentials, id) : null,
      webhookSecretSealed: this.secrets.seal(webhookSecret, id),
    });
    try {
      const stored = await this.repo().insert(integration);
      return { ...this.present(stored), webhook_secret: webhookSecret };
    } catch (err) {
      // The unique index decides races: of two concurrent creates exactly one gets here.
      if (isUniqueViolation(err, INTEGRATION_NAME_UNIQUE)) {
        throw new ConflictError(`An integration named '${body.name}' already exists in workspace ID '${workspaceId}'.`);
      }
      throw err;
    }
  }

  async get(workspaceId: string, id: string): Promise<IntegrationView> {
    return this.present(await this.load(workspaceId, id));
  }

  async list(workspaceId: string, page: Page): Promise<IntegrationView[]> {
    return (await this.repo().list(workspaceId, page)).map((i) => this.present(i));
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    try {
      if (!(await this.repo().delete(workspaceId, id))) throw NotFoundError.of('Integration', id);
    } catch (err) {
      // deployments.integration_id is ON DELETE RESTRICT: Postgres itself refuses while any use it.
      if (isForeignKeyViolation(err)) {
        throw new BadRequestError(`Integration ID ${id} is still used by deployments; delete them first.`);
      }
      throw err;
    }
  }

  /** Seed 4.3: the repositories the integration offers, each with its integration's id. */
  async repositories(
    workspaceId: string,
    id: string,
  ): Promise<Array<RepositoryEntry & { host_integration_id: string }>> {
    const integration = await this.load(workspaceId, id);
    return (await this.listFromHost(integration)).map((r) => ({ host_integration_id: id, ...r }));
  }

  /**
   * C4: a repohost deployment's repository must be one its integration lists. Runs before the
   * create transaction (a forge may be slow; no pool connection is held while it answers); the
   * deployment insert's foreign key then guards against a concurrent delete of the integration.
   */
  async findRepository(workspaceId: string, integrationId: string, repoUrl: string): Promise<RepositoryEntry> {
    const integration = await this.repo().find(workspaceId, integrationId);
    if (!integration) throw NotFoundError.of('Integration', integrationId);
    const wanted = normalizeRepoUrl(repoUrl);
    const entry = (await this.listFromHost(integration)).find((r) => normalizeRepoUrl(r.url) === wanted);
    if (!entry) {
      throw new BadRequestError(
        `Repository ${repoUrl} is not one of the repositories of integration ID ${integrationId}; ` +
          `pick a url from GET /v1/integrations/repohost/${integrationId}/repos.`,
      );
    }
    return entry;
  }

  /**
   * Up to 100 branches of one of the integration's repositories, its default branch first. A
   * repository the integration does not list is not found (404), so no URL reaches the host unchecked.
   */
  async branches(
    workspaceId: string,
    id: string,
    repoUrl: string,
  ): Promise<Array<RepositoryBranch & { is_default: boolean }>> {
    const integration = await this.load(workspaceId, id);
    const wanted = normalizeRepoUrl(repoUrl);
    const entry = (await this.listFromHost(integration)).find((r) => normalizeRepoUrl(r.url) === wanted);
    if (!entry)
      throw new NotFoundError(`Repository ${repoUrl} is not one of the repositories of integration ID ${id}.`);
    let branches: RepositoryBranch[];
    try {
      branches = await this.provider(integration).listBranches(entry.url);
    } catch (err) {
      if (err instanceof ProviderError) throw new BadGatewayError(err.message);
      throw err;
    }
    const marked = branches.map((b) => ({ ...b, is_default: b.name === entry.default_branch }));
    return [...marked.filter((b) => b.is_default), ...marked.filter((b) => !b.is_default)].slice(0, MAX_BRANCHES);
  }

  /** The push webhook's view of an integration: no workspace is known until the signature checks out. */
  findForWebhook(id: string): Promise<Integration | null> {
    return this.repo().findForWebhook(id);
  }

  /** The opened webhook secret (for signature checks only). */
  webhookSecret(integration: Integration): string | null {
    return integration.webhookSecretSealed ? this.secrets.open(integration.webhookSecretSealed, integration.id) : null;
  }

  async deliveries(workspaceId: string, id: string, page: Page): Promise<DeliveryView[]> {
    await this.load(workspaceId, id);
    return (await this.repo().listDeliveries(id, page)).map(presentDelivery);
  }

  /** The provider for an integration, its credentials opened (the builder does the same to clone). */
  private provider(integration: Integration): RepohostProvider {
    const credentials = integration.credentialsSealed
      ? this.secrets.openJson<Credentials>(integration.credentialsSealed, integration.id)
      : {};
    const spec = {
      provider: integration.provider,
      name: integration.name,
      config: integration.config,
      credentials,
    } as ProviderSpec;
    return createRepohostProvider(spec, {
      localReposRoot: this.config.localReposRoot,
      timeoutMs: this.options.providerTimeoutMs,
      outbound: this.config.outbound,
    });
  }

  private async listFromHost(integration: Integration): Promise<RepositoryEntry[]> {
    try {
      return await this.provider(integration).listRepositories();
    } catch (err) {
      if (err instanceof ProviderError) throw new BadGatewayError(err.message);
      throw err;
    }
  }

  private present(i: Integration): IntegrationView {
    return presentIntegration(i, this.config.publicUrl);
  }

  private async load(workspaceId: string, id: string): Promise<Integration> {
    const integration = await this.repo().find(workspaceId, id);
    if (!integration) throw NotFoundError.of('Integration', id);
    return integration;
  }

  /** The body's config split into what is stored in clear and what is sealed. */
  private async split(
    body: CreateIntegrationBody,
  ): Promise<{ config: IntegrationConfig; credentials: Credentials | null }> {
    const c = body.config;
    switch (body.provider) {
      case 'local':
        return { config: { root: await this.checkLocalRoot(c.root!) }, credentials: null };
      case 'github':
        return c.token
          ? { config: { api_url: c.api_url }, credentials: { token: c.token } }
          : {
              config: { api_url: c.api_url, app_id: c.app_id, installation_id: c.installation_id },
              credentials: { private_key: c.private_key },
            };
      case 'gitea':
        return { config: { api_url: c.api_url }, credentials: { token: c.token } };
    }
  }

  /**
   * C8: a `local` root must lie under SLIPWAY_LOCAL_REPOS_ROOT. Checked on the path as given
   * before the file system is touched (so paths elsewhere cannot be probed for existence), then
   * again with symlinks resolved (so a link inside cannot point outside). Stores the real path.
   */
  private async checkLocalRoot(root: string): Promise<string> {
    const allowed = this.config.localReposRoot;
    const allowedReal = await realpath(allowed).catch(() => null);
    const outside = () =>
      new BadRequestError(
        `config.root ${root} is outside the directory local repositories must lie under (${allowed}, SLIPWAY_LOCAL_REPOS_ROOT).`,
      );
    const given = path.resolve(root);
    if (!isWithin(allowed, given) && !(allowedReal && isWithin(allowedReal, given))) throw outside();
    if (!allowedReal)
      throw new BadRequestError(
        `The local repositories directory ${allowed} (SLIPWAY_LOCAL_REPOS_ROOT) does not exist on this server.`,
      );
    let real: string;
    try {
      real = await realpath(given);
    } catch {
      throw new BadRequestError(`config.root ${root} does not exist.`);
    }
    if (!isWithin(allowedReal, real)) throw outside();
    if (!(await stat(real)).isDirectory()) throw new BadRequestError(`config.root ${root} is not a directory.`);
    return real;
  }
}
