import type { Quotas } from '@slipway/domain';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';
import { QuotaRepository } from './quota.repository.js';

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
    await this.manager.query(
      `INSERT INTO registry_push_tokens (id, deployment_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)`,
      [id, deploymentId, tokenHash, expiresAt],
    );
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
    return row
      ? { deploymentId: row.deployment_id, workspaceId: row.workspace_id, expiresAt: new Date(row.expires_at) }
      : null;
  }

  /** Revokes every push token of a deployment (its deletion). */
  async revokeOfDeployment(deploymentId: string): Promise<void> {
    await this.manager.query(
      `UPDATE registry_push_tokens SET revoked_at = now() WHERE deployment_id = $1 AND revoked_at IS NULL`,
      [deploymentId],
    );
  }

  /**
   * Records pushed blobs of deployments that still exist; a repeat of one already recorded is a
   * no-op, but for the size of a manifest row the deployer made first (recordUnpacked).
   */
  async recordBlobs(blobs: readonly PushedBlob[]): Promise<void> {
    if (!blobs.length) return;
    await this.manager.query(
      `INSERT INTO registry_blobs (repository, digest, deployment_id, workspace_id, size_bytes)
       SELECT b.repository, b.digest, d.id, d.workspace_id, b.size_bytes
         FROM jsonb_to_recordset($1::jsonb) AS b(repository text, digest text, deployment_id uuid, size_bytes bigint)
         JOIN deployments d ON d.id = b.deployment_id
       ON CONFLICT (repository, digest) DO UPDATE SET size_bytes = EXCLUDED.size_bytes WHERE registry_blobs.size_bytes = 0`,
      [
        JSON.stringify(
          blobs.map((b) => ({
            repository: b.repository,
            digest: b.digest,
            deployment_id: b.deploymentId,
            size_bytes: b.sizeBytes,
          })),
        ),
      ],
    );
  }

  /**
   * What the image `digest` of `repository` unpacks to on a deployer's disk (or, for one refused
   * past the bound, the bytes counted when the count stopped), on its manifest's row: made
   * (size 0, for its push event to fill in) if that event is not here yet. Only ever raised: a
   * refused count is short of the real size, and the same image always counts the same.
   */
  async recordUnpacked(repository: string, digest: string, deploymentId: string, unpackedBytes: number): Promise<void> {
    await this.manager.query(
      `INSERT INTO registry_blobs (repository, digest, deployment_id, workspace_id, size_bytes, unpacked_bytes)
       SELECT $1, $2, d.id, d.workspace_id, 0, $4 FROM deployments d WHERE d.id = $3
       ON CONFLICT (repository, digest) DO UPDATE SET unpacked_bytes = ` +
        `GREATEST(coalesce(registry_blobs.unpacked_bytes, 0), EXCLUDED.unpacked_bytes)`,
      [repository, digest, deploymentId, unpackedBytes],
    );
  }

  /** Every counted blob, with when its push was recorded. */
  async countedBlobs(): Promise<{ repository: string; digest: string; createdAt: Date }[]> {
    const rows = await queryRows<{ repository: string; digest: string; created_at: Date }>(
      this.manager,
      `SELECT repository, digest, created_at FROM registry_blobs`,
    );
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

  /**
   * Bytes the workspace's images take: each distinct blob once as the registry stores it
   * (compressed), plus what each distinct image unpacked to on a deployer's disk.
   */
  async workspaceUsage(workspaceId: string): Promise<{ storedBytes: number; unpackedBytes: number }> {
    const [row] = await queryRows<{ stored: string; unpacked: string }>(
      this.manager,
      `SELECT coalesce(sum(size_bytes), 0) AS stored, coalesce(sum(unpacked_bytes), 0) AS unpacked
         FROM (SELECT max(size_bytes) AS size_bytes, max(unpacked_bytes) AS unpacked_bytes FROM registry_blobs ` +
        `WHERE workspace_id = $1 GROUP BY digest) b`,
      [workspaceId],
    );
    return { storedBytes: Number(row!.stored), unpackedBytes: Number(row!.unpacked) };
  }

  /** What the `registry_bytes` quota counts: workspaceUsage's two parts together. */
  async workspaceBytes(workspaceId: string): Promise<number> {
    const { storedBytes, unpackedBytes } = await this.workspaceUsage(workspaceId);
    return storedBytes + unpackedBytes;
  }

  /**
   * What the `registry_bytes` quota decides by: the workspace's quota in force and the bytes its
   * images take (workspaceBytes); and which of `digests` (blobs a push just finished) its counted
   * blobs already hold. The one read of both the token endpoint and the registry's push guard
   * (libs/registry/src/push-guard.ts), so the two cannot disagree.
   */
  async registryRoom(
    workspaceId: string,
    defaults: Quotas,
    digests: readonly string[] = [],
  ): Promise<{ quotaBytes: number; usedBytes: number; recordedDigests: string[] }> {
    const [{ registryBytes }, usedBytes, recorded] = await Promise.all([
      new QuotaRepository(this.manager).effective(workspaceId, defaults),
      this.workspaceBytes(workspaceId),
      digests.length
        ? queryRows<{ digest: string }>(
            this.manager,
            `SELECT DISTINCT digest FROM registry_blobs WHERE workspace_id = $1 AND digest = ANY($2) AND size_bytes > 0`,
            [workspaceId, digests],
          )
        : Promise.resolve([]),
    ]);
    return { quotaBytes: registryBytes, usedBytes, recordedDigests: recorded.map((r) => r.digest) };
  }
}
