import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** What a valid push token grants: its deployment (and that deployment's workspace). */
export interface PushTokenGrant {
  deploymentId: string;
  workspaceId: string;
  expiresAt: Date;
}

/** One blob or manifest the registry reported pushed. */
export interface PushedBlob {
  repository: string;
  digest: string;
  deploymentId: string;
  sizeBytes: number;
}

/**
 * Rows of the built-in registry (docs/api.md, Images and the built-in registry): push tokens,
 * kept as SHA-256 hashes only, and the blobs pushed per workspace (the `registry_bytes` quota).
 */
export class RegistryRepository {
  constructor(private readonly manager: EntityManager) {}

  async insertPushToken(id: string, deploymentId: string, tokenHash: Buffer, expiresAt: Date): Promise<void> {
    await this.manager.query(`INSERT INTO registry_push_tokens (id, deployment_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)`, [
      id,
      deploymentId,
      tokenHash,
      expiresAt,
    ]);
  }

  /**
   * The deployment of a push token that is unexpired, unrevoked and whose deployment is not
   * being deleted; null otherwise.
   */
  async grantOf(tokenHash: Buffer): Promise<PushTokenGrant | null> {
    const [row] = await queryRows<{ deployment_id: string; workspace_id: string; expires_at: Date }>(
      this.manager,
      `SELECT t.deployment_id, d.workspace_id, t.expires_at FROM registry_push_tokens t JOIN deployments d ON d.id = t.deployment_id
        WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND t.expires_at > now() AND d.status <> 'AWAITING_DELETE'`,
      [tokenHash],
    );
    return row ? { deploymentId: row.deployment_id, workspaceId: row.workspace_id, expiresAt: new Date(row.expires_at) } : null;
  }

  /** Revokes every push token of a deployment (its deletion). */
  async revokeOfDeployment(deploymentId: string): Promise<void> {
    await this.manager.query(`UPDATE registry_push_tokens SET revoked_at = now() WHERE deployment_id = $1 AND revoked_at IS NULL`, [deploymentId]);
  }

  /** Records pushed blobs of deployments that still exist; a repeat of one already recorded is a no-op. */
  async recordBlobs(blobs: readonly PushedBlob[]): Promise<void> {
    if (!blobs.length) return;
    await this.manager.query(
      `INSERT INTO registry_blobs (repository, digest, deployment_id, workspace_id, size_bytes)
       SELECT b.repository, b.digest, d.id, d.workspace_id, b.size_bytes
         FROM jsonb_to_recordset($1::jsonb) AS b(repository text, digest text, deployment_id uuid, size_bytes bigint)
         JOIN deployments d ON d.id = b.deployment_id
       ON CONFLICT (repository, digest) DO NOTHING`,
      [JSON.stringify(blobs.map((b) => ({ repository: b.repository, digest: b.digest, deployment_id: b.deploymentId, size_bytes: b.sizeBytes })))],
    );
  }

  /** Every counted blob, with when its push was recorded. */
  async countedBlobs(): Promise<{ repository: string; digest: string; createdAt: Date }[]> {
    const rows = await queryRows<{ repository: string; digest: string; created_at: Date }>(this.manager, `SELECT repository, digest, created_at FROM registry_blobs`);
    return rows.map((r) => ({ repository: r.repository, digest: r.digest, createdAt: new Date(r.created_at) }));
  }

  /** Stops counting blobs garbage collection removed from their repository. */
  async forgetBlobs(blobs: readonly { repository: string; digest: string }[]): Promise<number> {
    if (!blobs.length) return 0;
    const rows = await queryRows(
      this.manager,
      `DELETE FROM registry_blobs r USING jsonb_to_recordset($1::jsonb) AS b(repository text, digest text)
        WHERE r.repository = b.repository AND r.digest = b.digest RETURNING 1`,
      [JSON.stringify(blobs.map((b) => ({ repository: b.repository, digest: b.digest })))],
    );
    return rows.length;
  }

  /** Bytes the workspace's images take in the registry: each distinct blob once. */
  async workspaceBytes(workspaceId: string): Promise<number> {
    const [row] = await queryRows<{ n: string }>(
      this.manager,
      `SELECT coalesce(sum(size_bytes), 0) AS n FROM (SELECT DISTINCT ON (digest) size_bytes FROM registry_blobs WHERE workspace_id = $1) b`,
      [workspaceId],
    );
    return Number(row!.n);
  }
}
