import type { Config } from '@slipway/config';
import {
  DeploymentDomainRepository,
  DeploymentRepository,
  stateOnceVerified,
  type DataSource,
  type Deployment,
  type DeploymentDomain,
  type DomainState,
  type EntityManager,
} from '@slipway/db';
import {
  BadRequestError,
  ConflictError,
  domainHost,
  NotFoundError,
  reservedHostReason,
  UnprocessableError,
} from '@slipway/domain';
import { iso } from '../schemas/common.schema.js';

/** The TXT record that proves control of a host (docs/api.md, Domains). */
export const VERIFICATION_RECORD_PREFIX = '_slipway-challenge.';

/** The API shape of a custom domain. */
export function presentDomain(d: DeploymentDomain) {
  return {
    host: d.host,
    state: d.state,
    error: d.error,
    // What to publish while the host is unproven; nothing once it is.
    verification: d.verifiedAt
      ? null
      : { type: 'TXT' as const, name: `${VERIFICATION_RECORD_PREFIX}${d.host}`, value: d.verificationToken },
    from_custom_url: d.fromCustomUrl,
    created_at: iso(d.createdAt)!,
  };
}

export type DomainView = ReturnType<typeof presentDomain>;

/**
 * The rules of claiming a host, shared by `POST …/domains` and `source_config.custom_url`: a DNS
 * name, none of the reserved ones, held by one deployment in the whole installation (409 names
 * no other deployment), on Slipway's own runtime only (a listener's cluster renders its own
 * Ingress). Verified at once when verification is off, else pending until the edge finds the
 * TXT record. Claiming or releasing never starts a rollout.
 */
export class DomainClaims {
  private readonly reserved: string[];
  /** The state a host enters once verified: issuing when the edge obtains certificates itself. */
  private readonly verifiedState: DomainState;

  constructor(private readonly config: Pick<Config, 'edge' | 'domains' | 'publicUrl'>) {
    this.reserved = [new URL(config.publicUrl).hostname.toLowerCase()];
    this.verifiedState = stateOnceVerified(!!config.edge.acmeDirectoryUrl);
  }

  /** The stored host of a user's input, or a 400 naming what is wrong with it. */
  hostOf(input: string, field: string): string {
    const host = domainHost(input);
    if (!host)
      throw new BadRequestError(
        `${field} '${input}' is not a domain name (a DNS name of two labels or more; no IP address).`,
      );
    const reason = reservedHostReason(host, this.config.edge.appsDomain, this.reserved);
    if (reason) throw new UnprocessableError(`${field}: ${reason}; it cannot be claimed.`);
    return host;
  }

  async claim(
    manager: EntityManager,
    deployment: Deployment,
    host: string,
    fromCustomUrl: boolean,
  ): Promise<{ domain: DeploymentDomain; created: boolean }> {
    if (deployment.listenerId) {
      throw new UnprocessableError(
        "This deployment runs on a listener's cluster: its host is its Ingress, set with source_config.custom_url.",
      );
    }
    const claimed = await new DeploymentDomainRepository(manager).claim({
      deploymentId: deployment.id,
      workspaceId: deployment.workspaceId,
      host,
      verifiedAs: this.config.domains.verification === 'off' ? this.verifiedState : null,
      fromCustomUrl,
    });
    if (claimed === 'taken') throw new ConflictError(`The host '${host}' belongs to another deployment.`);
    return claimed;
  }

  /**
   * `source_config.custom_url` set (or changed) on an embedded deployment: its host claimed, the
   * one it replaces released. A URL whose host cannot be a custom domain (an IP address, a
   * reserved name) is kept as the field's value, as before the edge, and routes nothing.
   */
  async followCustomUrl(
    manager: EntityManager,
    deployment: Deployment,
    customUrl: string | null | undefined,
  ): Promise<void> {
    if (deployment.listenerId || customUrl == null) return;
    const host = domainHost(customUrl);
    const claimable = host && !reservedHostReason(host, this.config.edge.appsDomain, this.reserved) ? host : null;
    await new DeploymentDomainRepository(manager).releaseCustomUrl(deployment.id, claimable);
    if (claimable) await this.claim(manager, deployment, claimable, true);
  }
}

/** `GET/POST/DELETE /v2/deployments/{id}/domains` (docs/api.md, Domains). */
export class DomainService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly claims: DomainClaims,
  ) {}

  async list(workspaceId: string, deploymentId: string): Promise<DomainView[]> {
    return this.dataSource.transaction(async (m) => {
      await this.deployment(m, workspaceId, deploymentId, false);
      return (await new DeploymentDomainRepository(m).list(deploymentId)).map(presentDomain);
    });
  }

  /** Claims a host; `created` false when the deployment held it already (200 rather than 201). */
  async add(
    workspaceId: string,
    deploymentId: string,
    input: string,
  ): Promise<{ domain: DomainView; created: boolean }> {
    const host = this.claims.hostOf(input, 'host');
    return this.dataSource.transaction(async (m) => {
      const deployment = await this.deployment(m, workspaceId, deploymentId, true);
      const { domain, created } = await this.claims.claim(m, deployment, host, false);
      return { domain: presentDomain(domain), created };
    });
  }

  async remove(workspaceId: string, deploymentId: string, input: string): Promise<void> {
    const host = domainHost(input);
    await this.dataSource.transaction(async (m) => {
      await this.deployment(m, workspaceId, deploymentId, true);
      if (!host || !(await new DeploymentDomainRepository(m).release(deploymentId, host)))
        throw new NotFoundError(`'${input}' is not a domain of this deployment.`);
    });
  }

  private async deployment(m: EntityManager, workspaceId: string, id: string, lock: boolean): Promise<Deployment> {
    const repo = new DeploymentRepository(m);
    const deployment = lock ? await repo.lockInWorkspace(workspaceId, id) : await repo.find(workspaceId, id);
    if (!deployment) throw NotFoundError.of('Deployment', id);
    if (lock && deployment.status === 'AWAITING_DELETE')
      throw new ConflictError('The deployment is being deleted; its domains are released.');
    return deployment;
  }
}
