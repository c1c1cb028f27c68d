import type { EntityManager } from 'typeorm';
import type { DeploymentStatus } from '@slipway/domain';
import { queryRows } from '../sql.js';

/** An upload as a build sees it: whose it is, and whether its bytes all arrived. */
export interface UploadRecord {
  deploymentId: string;
  completedAt: Date | null;
}

/** An upload as a PUT of its bytes sees it: whether it is complete, and its deployment's status. */
export interface UploadState {
  completedAt: Date | null;
  deploymentStatus: DeploymentStatus;
}

/**
 * `uploads`: the api's upload service records an upload URL and then its completed tarball;
 * PATCH checks a revision names a completed one; the builder reads it back.
 */
export class UploadRepository {
  constructor(private readonly db: EntityManager) {}

  async find(objectPath: string): Promise<UploadRecord | null> {
    const [row] = await queryRows<{ deployment_id: string; completed_at: Date | null }>(
      this.db,
      `SELECT deployment_id, completed_at FROM uploads WHERE object_path = $1`,
      [objectPath],
    );
    return row ? { deploymentId: row.deployment_id, completedAt: row.completed_at } : null;
  }

  /** Records a new, not yet completed upload of the deployment. */
  async insert(objectPath: string, deploymentId: string): Promise<void> {
    await this.db.query(`INSERT INTO uploads (object_path, deployment_id) VALUES ($1, $2)`, [objectPath, deploymentId]);
  }

  /**
   * Whether the upload is complete, with its deployment's status; null when it is gone (its
   * deployment deleted). With `lock`, the upload row is locked FOR UPDATE for the rest of the
   * transaction, so a delete of the deployment (cascading to it) cannot interleave.
   */
  async state(objectPath: string, lock = false): Promise<UploadState | null> {
    const [row] = await queryRows<{ completed_at: Date | null; status: DeploymentStatus }>(
      this.db,
      `SELECT u.completed_at, d.status FROM uploads u JOIN deployments d ON d.id = u.deployment_id
        WHERE u.object_path = $1 ${lock ? 'FOR UPDATE OF u' : ''}`,
      [objectPath],
    );
    return row ? { completedAt: row.completed_at, deploymentStatus: row.status } : null;
  }

  /** Marks the upload complete, with its size and digest, once its file is in place. */
  async complete(objectPath: string, sizeBytes: number, sha256: string): Promise<void> {
    await this.db.query(
      `UPDATE uploads SET size_bytes = $2, sha256 = $3, completed_at = now() WHERE object_path = $1`,
      [objectPath, sizeBytes, sha256],
    );
  }

  /**
   * Whether the deployment has this completed upload, share-locking it until the transaction
   * ends: retention never deletes an upload a revision is being pointed at (it skips locked rows).
   */
  async shareCompleted(objectPath: string, deploymentId: string): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `SELECT 1 FROM uploads WHERE object_path = $1 AND deployment_id = $2 AND completed_at IS NOT NULL FOR SHARE`,
      [objectPath, deploymentId],
    );
    return rows.length > 0;
  }
}
