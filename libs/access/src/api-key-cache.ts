import { ApiKeyRepository, type ApiKey, type DataSource } from '@slipway/db';
import type { Logger } from '@slipway/logging';

/** How often one process records a key's use: `last_used_at` is minute-grained by contract. */
const TOUCH_EVERY_MS = 60_000;

interface Entry {
  lookup: Promise<ApiKey | null>;
  /** Until when a found key is served from here; 0 while the lookup runs. */
  freshUntil: number;
  keyId?: string;
}

/**
 * The API-key lookup every authenticated request makes, cached for `ttlMs` in this process.
 *
 * - Concurrent requests with one key share a single lookup.
 * - Only found keys are kept: an unknown key is asked again every time, so guessing cannot fill
 *   the cache, and a new key works at once.
 * - A revoke in this process forgets the key at once; in another process the entry expires within
 *   `ttlMs` (at most 1 s by configuration), so a revoked key stops working everywhere within a
 *   second (docs/api.md, Authentication and tenancy).
 * - Use is recorded at most once a minute per key and process, off the request's path.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly ttlMs: number,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The active key with this hash, or null. */
  async find(keyHash: string): Promise<ApiKey | null> {
    const cached = this.entries.get(keyHash);
    if (cached && (cached.freshUntil === 0 || cached.freshUntil > this.now())) return cached.lookup;

    const entry: Entry = { lookup: this.repo().findActiveByHash(keyHash), freshUntil: 0 };
    this.entries.set(keyHash, entry);
    this.sweep();
    try {
      const row = await entry.lookup;
      if (this.entries.get(keyHash) !== entry) return row;
      if (row && this.ttlMs > 0) {
        entry.freshUntil = this.now() + this.ttlMs;
        entry.keyId = row.id;
      } else this.entries.delete(keyHash);
      return row;
    } catch (err) {
      if (this.entries.get(keyHash) === entry) this.entries.delete(keyHash);
      throw err;
    }
  }

  /** Records that a key was used, at most once a minute per key in this process. Never throws. */
  touch(keyId: string): void {
    const now = this.now();
    if ((this.touchedAt.get(keyId) ?? -Infinity) > now - TOUCH_EVERY_MS) return;
    this.touchedAt.set(keyId, now);
    // Bookkeeping must never fail the request it describes.
    this.repo()
      .touch(keyId)
      .catch((err) => this.log.warn({ err, keyId }, 'could not record API key use'));
  }

  /** Drops a key this process revoked, so its very next use is refused here. */
  forget(keyId: string): void {
    for (const [hash, entry] of this.entries) {
      // A lookup still running may return the key: drop it too, it is asked again next time.
      if (entry.freshUntil === 0 || entry.keyId === keyId) this.entries.delete(hash);
    }
    this.touchedAt.delete(keyId);
  }

  /** Drops expired entries, so keys nobody uses any more do not pile up. */
  private sweep(): void {
    if (this.entries.size < 1_000) return;
    const now = this.now();
    for (const [hash, entry] of this.entries)
      if (entry.freshUntil !== 0 && entry.freshUntil <= now) this.entries.delete(hash);
    for (const [id, at] of this.touchedAt) if (at <= now - TOUCH_EVERY_MS) this.touchedAt.delete(id);
  }

  private repo(): ApiKeyRepository {
    return new ApiKeyRepository(this.dataSource.manager);
  }
}
