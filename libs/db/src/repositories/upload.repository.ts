import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** An upload as a build sees it: whose it is, and whether its bytes all arrived. */
export interface UploadRecord {
  deploymentId: string;
  completedAt: Date | null;
}

/** Named reads of `uploads` for the builder (the api's upload service writes them). */
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
}
