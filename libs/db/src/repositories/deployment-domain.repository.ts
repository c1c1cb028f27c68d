import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** A custom domain's lifecycle (docs/api.md, Domains). */
export type DomainState = 'pending_verification' | 'issuing' | 'active' | 'failed';

/** The state a verified host enters: `issuing` when the edge obtains its certificates through ACME, else `active`. */
export const stateOnceVerified = (acme: boolean): DomainState => (acme ? 'issuing' : 'active');

export interface DeploymentDomain {
  id: string;
  deploymentId: string;
  workspaceId: string;
  host: string;
  state: DomainState;
  error: string | null;
  /** The value of the TXT record `_slipway-challenge.<host>` that proves control of the host. */
  verificationToken: string;
  verifiedAt: Date | null;
  fromCustomUrl: boolean;
  createdAt: Date;
}

interface Row {
  id: string;
  deployment_id: string;
  workspace_id: string;
  host: string;
  state: DomainState;
  error: string | null;
  verification_token: string;
  verified_at: Date | null;
  from_custom_url: boolean;
  created_at: Date;
}

const toDomain = (r: Row): DeploymentDomain => ({
  id: r.id,
  deploymentId: r.deployment_id,
  workspaceId: r.workspace_id,
  host: r.host,
  state: r.state,
  error: r.error,
  verificationToken: r.verification_token,
  verifiedAt: r.verified_at,
  fromCustomUrl: r.from_custom_url,
  createdAt: r.created_at,
});

const COLUMNS =
  'id, deployment_id, workspace_id, host, state, error, verification_token, verified_at, from_custom_url, created_at';

export interface DomainClaim {
  deploymentId: string;
  workspaceId: string;
  /** Lower case, no port (the caller normalizes it). */
  host: string;
  /** Verified at once (verification turned off), in this state; else pending verification. */
  verifiedAs: DomainState | null;
  fromCustomUrl: boolean;
}

/**
 * The custom domains of deployments: claimed by the api (each host by one deployment in the
 * whole installation), verified and moved through issuance by the edge. Every change is
 * announced to the edges and evented by the table's trigger (migration 1765000000100).
 */
export class DeploymentDomainRepository {
  constructor(private readonly manager: EntityManager) {}

  async list(deploymentId: string): Promise<DeploymentDomain[]> {
    const rows = await queryRows<Row>(
      this.manager,
      `SELECT ${COLUMNS} FROM deployment_domains WHERE deployment_id = $1 ORDER BY created_at, host`,
      [deploymentId],
    );
    return rows.map(toDomain);
  }

  /**
   * Claims `host` for the deployment: the new row, the deployment's own row when it holds the
   * host already, or `taken` when another deployment does (which the caller must not reveal more
   * of than that).
   */
  async claim(claim: DomainClaim): Promise<{ domain: DeploymentDomain; created: boolean } | 'taken'> {
    const token = `slw-verify-${randomBytes(18).toString('base64url')}`;
    const [inserted] = await queryRows<Row>(
      this.manager,
      `INSERT INTO deployment_domains (id, deployment_id, workspace_id, host, state, verification_token, verified_at, from_custom_url)
       VALUES ($1, $2, $3, $4, coalesce($5, 'pending_verification'), $6, CASE WHEN $5::text IS NULL THEN NULL ELSE now() END, $7)
       ON CONFLICT (host) DO NOTHING RETURNING ${COLUMNS}`,
      [randomUUID(), claim.deploymentId, claim.workspaceId, claim.host, claim.verifiedAs, token, claim.fromCustomUrl],
    );
    if (inserted) return { domain: toDomain(inserted), created: true };
    const [held] = await queryRows<Row>(this.manager, `SELECT ${COLUMNS} FROM deployment_domains WHERE host = $1`, [
      claim.host,
    ]);
    if (!held || held.deployment_id !== claim.deploymentId) return 'taken';
    if (claim.fromCustomUrl && !held.from_custom_url)
      await this.manager.query(`UPDATE deployment_domains SET from_custom_url = true WHERE id = $1`, [held.id]);
    return {
      domain: { ...toDomain(held), fromCustomUrl: held.from_custom_url || claim.fromCustomUrl },
      created: false,
    };
  }

  /** Releases one host of the deployment; false when it holds no such host. */
  async release(deploymentId: string, host: string): Promise<boolean> {
    const gone = await queryRows(
      this.manager,
      `DELETE FROM deployment_domains WHERE deployment_id = $1 AND host = $2 RETURNING id`,
      [deploymentId, host],
    );
    return gone.length > 0;
  }

  /** Releases every host of the deployment (its delete has started). */
  async releaseAll(deploymentId: string): Promise<void> {
    await this.manager.query(`DELETE FROM deployment_domains WHERE deployment_id = $1`, [deploymentId]);
  }

  /** Releases the host that stood for the deployment's `custom_url`, unless it is `keep`. */
  async releaseCustomUrl(deploymentId: string, keep: string | null): Promise<void> {
    await this.manager.query(
      `DELETE FROM deployment_domains WHERE deployment_id = $1 AND from_custom_url AND host IS DISTINCT FROM $2`,
      [deploymentId, keep],
    );
  }

  /** Domains still to verify, least recently checked first, at most once per `everyMs`. */
  async pendingVerification(everyMs: number, limit = 50): Promise<DeploymentDomain[]> {
    const rows = await queryRows<Row>(
      this.manager,
      `SELECT ${COLUMNS} FROM deployment_domains
        WHERE verified_at IS NULL AND (checked_at IS NULL OR checked_at < now() - make_interval(secs => $1 / 1000.0))
        ORDER BY checked_at NULLS FIRST LIMIT $2`,
      [everyMs, limit],
    );
    return rows.map(toDomain);
  }

  /** A verification attempt that found no proof: when, and what was missing. */
  async recordCheck(id: string, error: string): Promise<void> {
    await this.manager.query(
      `UPDATE deployment_domains SET checked_at = now(), error = $2, updated_at = now() WHERE id = $1 AND verified_at IS NULL`,
      [id, error],
    );
  }

  /** Proven: routed from now on, in `state`. */
  async markVerified(id: string, state: DomainState): Promise<void> {
    await this.manager.query(
      `UPDATE deployment_domains SET verified_at = now(), checked_at = now(), state = $2, error = NULL, ` +
        `updated_at = now() WHERE id = $1 AND verified_at IS NULL`,
      [id, state],
    );
  }

  /** A verified host's certificate state (the edge's keeper); unverified hosts stay as they are. */
  async setState(host: string, state: DomainState, error: string | null): Promise<void> {
    await this.manager.query(
      `UPDATE deployment_domains SET state = $2, error = $3, updated_at = now()
        WHERE host = $1 AND verified_at IS NOT NULL AND (state IS DISTINCT FROM $2 OR error IS DISTINCT FROM $3)`,
      [host, state, error],
    );
  }

  /** Every verified host (the hosts the edge routes and obtains certificates for). */
  async verifiedHosts(): Promise<string[]> {
    const rows = await queryRows<{ host: string }>(
      this.manager,
      `SELECT host FROM deployment_domains WHERE verified_at IS NOT NULL ORDER BY host`,
    );
    return rows.map((r) => r.host);
  }
}
