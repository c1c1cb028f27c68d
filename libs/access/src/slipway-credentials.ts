import { API_KEY_PREFIX } from '@slipway/crypto';
import { ApiKeyRepository, type DataSource } from '@slipway/db';
import { credentialId } from './credentials.js';

/** How long a read of the unprefixed keys is used: a new or revoked bootstrap key is seen within it. */
const REFRESH_MS = 5_000;

/**
 * Recognises every credential that authenticates to Slipway, with no lookup per request: a
 * `slw_` key on sight, any other value only if it is one of the few active keys without the
 * prefix (an operator-chosen SLIPWAY_BOOTSTRAP_API_KEY), read whole and kept for REFRESH_MS.
 * A value that is neither (an app's own token) costs one digest and a set lookup.
 */
export class SlipwayCredentials {
  private hashes: Promise<ReadonlySet<string>> | null = null;
  private readAt = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly now: () => number = Date.now,
  ) {}

  async isSlipwayKey(credential: string): Promise<boolean> {
    if (credential.startsWith(API_KEY_PREFIX)) return true;
    return (await this.unprefixed()).has(credentialId(credential));
  }

  private unprefixed(): Promise<ReadonlySet<string>> {
    if (!this.hashes || this.now() - this.readAt > REFRESH_MS) {
      this.readAt = this.now();
      const read = new ApiKeyRepository(this.dataSource.manager)
        .unprefixedActiveHashes(API_KEY_PREFIX)
        .then((h) => new Set(h));
      // A failed read is not kept: the next request asks again.
      read.catch(() => this.hashes === read && (this.hashes = null));
      this.hashes = read;
    }
    return this.hashes;
  }
}
