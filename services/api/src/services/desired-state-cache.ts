import { createHmac } from 'node:crypto';
import type { DesiredDeployment } from '@slipway/domain';

interface Rendered {
  /** Digest of everything the entries were rendered from. */
  fingerprint: string;
  /** Strong ETag of the entries (not of `generated_at`). */
  etag: string;
  deployments: DesiredDeployment[];
}

/**
 * The desired state of each listener as last rendered, kept while what it was rendered from is
 * unchanged, and its ETag. Agents poll every few seconds and the answer rarely changes: with
 * `If-None-Match` an unchanged poll is a 304 without a body, and even a full answer is not
 * rendered again (manifests for every entry, secrets and store passwords opened).
 *
 * Both digests are HMACs under a key derived from the secrets key: the ETag covers secret values,
 * so it must reveal nothing about them, and every api replica computes the same one.
 */
export class DesiredStateCache {
  private readonly byListener = new Map<string, Rendered>();

  constructor(
    private readonly key: Buffer,
    private readonly maxListeners = 10_000,
  ) {}

  /** The rendering of `listenerId` from `inputs`: the cached one when the inputs are the same, else `render()`'s. */
  async get(listenerId: string, inputs: unknown, render: () => Promise<DesiredDeployment[]>): Promise<Rendered> {
    const fingerprint = this.digest(JSON.stringify(inputs));
    const cached = this.byListener.get(listenerId);
    if (cached?.fingerprint === fingerprint) return cached;
    const deployments = await render();
    const rendered = { fingerprint, etag: `"${this.digest(JSON.stringify(deployments)).slice(0, 32)}"`, deployments };
    this.byListener.delete(listenerId); // re-inserted last: the map's order is least recently rendered first
    if (this.byListener.size >= this.maxListeners) this.byListener.delete(this.byListener.keys().next().value!);
    this.byListener.set(listenerId, rendered);
    return rendered;
  }

  private digest(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }
}

/** Whether an `If-None-Match` header names `etag` (weak comparison, lists and `*` included). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}
