import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { generateApiKey } from '@slipway/crypto';
import { IsNull } from 'typeorm';
import { ApiKey } from '../entities/index.js';

export interface ApiKeyFilter {
  organizationId: string;
  /** When set, only keys of this workspace. */
  workspaceId?: string | null;
}

/** API keys. Revoked keys stay as rows (for audit) but are invisible to every lookup here. */
export class ApiKeyRepository {
  constructor(private readonly manager: EntityManager) {}

  findActiveByHash(keyHash: string): Promise<ApiKey | null> {
    return this.manager.findOneBy(ApiKey, { keyHash, revokedAt: IsNull() });
  }

  /**
   * The hashes of active keys without Slipway's `slw_` prefix: only an operator-chosen
   * SLIPWAY_BOOTSTRAP_API_KEY is one. Few rows, read whole, so a caller can recognise such a key
   * without a lookup per request.
   */
  async unprefixedActiveHashes(prefix: string): Promise<string[]> {
    const rows: Array<{ key_hash: string }> = await this.manager.query(
      `SELECT key_hash FROM api_keys WHERE revoked_at IS NULL AND left(prefix, length($1)) <> $1`,
      [prefix],
    );
    return rows.map((r) => r.key_hash);
  }

  /**
   * Records use at most once a minute per key: a write per request would turn every read
   * into a write and serialize concurrent requests of one key on its row lock.
   */
  async touch(id: string): Promise<void> {
    await this.manager.query(
      `UPDATE api_keys SET last_used_at = now()
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
      [id],
    );
  }

  async insert(key: ApiKey): Promise<ApiKey> {
    await this.manager.insert(ApiKey, key);
    return key;
  }

  list({ organizationId, workspaceId }: ApiKeyFilter): Promise<ApiKey[]> {
    return this.manager.find(ApiKey, {
      where: { organizationId, revokedAt: IsNull(), ...(workspaceId ? { workspaceId } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
    });
  }

  findActive(id: string, { organizationId, workspaceId }: ApiKeyFilter): Promise<ApiKey | null> {
    return this.manager.findOneBy(ApiKey, {
      id,
      organizationId,
      revokedAt: IsNull(),
      ...(workspaceId ? { workspaceId } : {}),
    });
  }

  /** Conditional: revoking twice (or racing another revoke) reports false the second time. */
  async revoke(id: string): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(ApiKey)
      .set({ revokedAt: () => 'now()' })
      .where('id = :id AND revoked_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) > 0;
  }
}

export interface IssueApiKeyInput {
  organizationId: string;
  workspaceId: string | null;
  listenerId?: string | null;
  scope: ApiKey['scope'];
  role: ApiKey['role'];
  description?: string;
}

/**
 * Generates and stores a new key; returns the row and the key itself, which exists nowhere
 * else afterwards. Shared by the api and the CLI so both mint keys the same way.
 */
export async function issueApiKey(
  manager: EntityManager,
  input: IssueApiKeyInput,
): Promise<{ row: ApiKey; key: string }> {
  const generated = generateApiKey();
  const row = manager.create(ApiKey, {
    id: randomUUID(),
    organizationId: input.organizationId,
    workspaceId: input.workspaceId,
    listenerId: input.listenerId ?? null,
    scope: input.scope,
    role: input.role,
    description: input.description ?? '',
    prefix: generated.prefix,
    keyHash: generated.hash,
    lastUsedAt: null,
    revokedAt: null,
  });
  await manager.insert(ApiKey, row);
  const stored = await manager.findOneByOrFail(ApiKey, { id: row.id });
  return { row: stored, key: generated.key };
}
