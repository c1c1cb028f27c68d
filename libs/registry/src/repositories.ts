/**
 * Which registry repositories belong to which deployment: a deployment's push token covers
 * `<deployment id>/<one segment>` (docs/api.md, Images and the built-in registry).
 */

/** A repository path component as distribution accepts it. */
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The `<prefix>` of a deployment's repositories (the part of `registry_url` after the host). */
export const repositoryPrefix = (deploymentId: string): string => deploymentId;

/** The deployment a repository belongs to, when it is `<deployment id>/<one segment>`; else null. */
export function deploymentOfRepository(name: string): string | null {
  const parts = name.split('/');
  if (parts.length !== 2 || !UUID.test(parts[0]!) || !COMPONENT.test(parts[1]!) || parts[1]!.length > 128) return null;
  return parts[0]!;
}

export interface ImageReference {
  /** `host:port` */
  registry: string;
  repository: string;
  tag: string | null;
  digest: string | null;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** `host:port/repo/name:tag` or `host:port/repo/name@sha256:…` (a scheme prefix is tolerated); null when malformed. */
export function parseImageReference(uri: string): ImageReference | null {
  const bare = uri.replace(/^[a-z]+:\/\//, '');
  const slash = bare.indexOf('/');
  if (slash <= 0) return null;
  const registry = bare.slice(0, slash);
  let rest = bare.slice(slash + 1);
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return null;
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0 && !rest.slice(colon).includes('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return null;
  }
  if (!rest || !rest.split('/').every((c) => COMPONENT.test(c))) return null;
  if (!tag && !digest) tag = 'latest';
  return { registry, repository: rest, tag, digest };
}
