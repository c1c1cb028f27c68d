import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** How long a key is remembered. */
const TTL = "interval '24 hours'";

/** The response a key's first request got, and that request's fingerprint. */
export interface StoredIdempotentResponse {
  requestHash: string;
  responseStatus: number;
  responseBody: unknown;
}

/**
 * `idempotency_keys`, run inside the business transaction whose response a key records: the key
 * row and the rows it guards commit or roll back together.
 */
export class IdempotencyRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Deletes the workspace's key when it is older than its lifetime, so it can be claimed anew. */
  async dropExpired(workspaceId: string, key: string): Promise<void> {
    await this.manager.query(
      `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2 AND created_at < now() - ${TTL}`,
      [workspaceId, key],
    );
  }

  /**
   * Inserts the key with an empty response: true when this call claimed it. A concurrent claim
   * of the same key blocks on its primary key until the first transaction ends, then gets false
   * (it committed) or true (it rolled back).
   */
  async claim(workspaceId: string, key: string, requestHash: string): Promise<boolean> {
    const inserted = await queryRows(
      this.manager,
      `INSERT INTO idempotency_keys (workspace_id, key, request_hash, response_status)
     VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING RETURNING key`,
      [workspaceId, key, requestHash],
    );
    return inserted.length > 0;
  }

  /** Records the response of the request that claimed the key. */
  async recordResponse(workspaceId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.manager.query(
      `UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE workspace_id = $1 AND key = $2`,
      [workspaceId, key, status, JSON.stringify(body ?? null)],
    );
  }

  /** The key's stored request fingerprint and response, or null when it is gone. */
  async find(workspaceId: string, key: string): Promise<StoredIdempotentResponse | null> {
    const [stored] = await queryRows<{ request_hash: string; response_status: number; response_body: unknown }>(
      this.manager,
      `SELECT request_hash, response_status, response_body FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
      [workspaceId, key],
    );
    return stored
      ? { requestHash: stored.request_hash, responseStatus: stored.response_status, responseBody: stored.response_body }
      : null;
  }
}
