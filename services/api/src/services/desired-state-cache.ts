import { createHmac } from 'node:crypto';
import type { DesiredDeployment } from '@slipway/domain';

interface Rendered {
  /** The fingerprint of the rows the entries were rendered from (ListenerPoll). */
  fingerprint: string;
  /** Strong ETag of the entries (not of `generated_at`). */
  etag: string;
  /** The entries, serialized once: a full answer writes only its envelope around them. */
  json: string;
}

/**
 * The desired state of each listener as last rendered, with the fingerprint of the rows it was
 * rendered from, and its ETag. Agents poll every few seconds and the answer rarely changes: a
 * poll whose rows have the same fingerprint is not rendered again (manifests for every entry,
 * secrets and store passwords opened), and with `If-None-Match` it is a 304 without a body.
 *
 * The ETag is an HMAC under a key derived from the secrets key: it covers secret values, so it
 * must reveal nothing about them, and every api replica computes the same one. Fingerprints stay
 * in this process.
 */
export class DesiredStateCache {
  private readonly byListener = new Map<string, Rendered>();

  constructor(
    private readonly key: Buffer,
    private readonly maxListeners = 10_000,
  ) {}

  /** The rendering of `listenerId` kept for rows of this fingerprint, if any. */
  find(listenerId: string, fingerprint: string): Rendered | undefined {
    const cached = this.byListener.get(listenerId);
    return cached?.fingerprint === fingerprint ? cached : undefined;
  }

  /** Keeps (and returns) `deployments`, rendered for `listenerId` from rows of this fingerprint. */
  keep(listenerId: string, fingerprint: string, deployments: DesiredDeployment[]): Rendered {
    const json = JSON.stringify(deployments);
    const etag = `"${createHmac('sha256', this.key).update(json).digest('base64url').slice(0, 32)}"`;
    const rendered = { fingerprint, etag, json };
    this.byListener.delete(listenerId); // re-inserted last: the map's order is least recently rendered first
    if (this.byListener.size >= this.maxListeners) this.byListener.delete(this.byListener.keys().next().value!);
    this.byListener.set(listenerId, rendered);
    return rendered;
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
