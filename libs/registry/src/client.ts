import type { KeyObject } from 'node:crypto';
import { signRegistryToken } from './token.js';

/** Every manifest kind a pushed image may have (OCI and Docker, single-platform and lists). */
const MANIFEST_TYPES = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

export class RegistryUnavailableError extends Error {}

/** fetch's own message is only `fetch failed`: the cause (`connect ECONNREFUSED …`) says what happened. */
function networkReason(err: unknown): string {
  const { message, cause } = err as Error & { cause?: { message?: string } };
  return cause?.message ? `${message} (${cause.message})` : message;
}

/**
 * The control plane's reads of its own registry, with pull tokens it signs itself (the same
 * key the registry trusts), so it never needs a password.
 */
export class RegistryClient {
  constructor(
    private readonly internalUrl: string,
    private readonly key: KeyObject,
    private readonly timeoutMs = 10_000,
  ) {}

  /** The digest the registry serves for `repository` at a tag or digest; null when it has none. */
  async resolve(repository: string, reference: string): Promise<string | null> {
    const { token } = signRegistryToken(this.key, {
      subject: 'slipway-platform',
      access: [{ type: 'repository', name: repository, actions: ['pull'] }],
      ttlSeconds: 60,
    });
    let res: Response;
    try {
      res = await fetch(`${this.internalUrl}/v2/${repository}/manifests/${encodeURIComponent(reference)}`, {
        method: 'HEAD',
        headers: { Authorization: `Bearer ${token}`, Accept: MANIFEST_TYPES },
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      throw new RegistryUnavailableError(
        `The image registry at ${this.internalUrl} did not answer: ${networkReason(err)}`,
      );
    }
    if (res.status === 404) return null;
    if (!res.ok)
      throw new RegistryUnavailableError(`The image registry answered ${res.status} for ${repository}:${reference}`);
    return res.headers.get('docker-content-digest');
  }

  /**
   * Deletes a manifest revision of `repository` (and the tags naming it): its blobs go at the
   * next sweep. False when the registry no longer has it.
   */
  async deleteManifest(repository: string, digest: string): Promise<boolean> {
    const { token } = signRegistryToken(this.key, {
      subject: 'slipway-platform',
      access: [{ type: 'repository', name: repository, actions: ['delete'] }],
      ttlSeconds: 60,
    });
    let res: Response;
    try {
      res = await fetch(`${this.internalUrl}/v2/${repository}/manifests/${digest}`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      throw new RegistryUnavailableError(
        `The image registry at ${this.internalUrl} did not answer: ${networkReason(err)}`,
      );
    }
    await res.body?.cancel();
    if (res.status === 404) return false;
    if (res.status !== 202)
      throw new RegistryUnavailableError(
        `The image registry answered ${res.status} to deleting ${repository}@${digest}`,
      );
    return true;
  }
}
