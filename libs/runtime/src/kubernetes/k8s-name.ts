import { createHash } from 'node:crypto';

/** Kubernetes' limit for object names that are DNS labels (Services, most workloads). */
export const K8S_NAME_MAX = 63;

/**
 * A StatefulSet's pods carry the label `controller-revision-hash: <name>-<hash>` (hash up to
 * 10 characters) and label values are capped at 63: a longer StatefulSet name is accepted by
 * the API server, but its pods can never be created.
 */
export const STATEFULSET_NAME_MAX = 52;

const HASH_LENGTH = 8;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** True for a DNS-1035 label (what a Service name must be; valid for every other kind too). */
export function isDns1035Label(value: string, max = K8S_NAME_MAX): boolean {
  return value.length <= max && DNS1035_LABEL.test(value);
}

/**
 * The name of an object derived from `base` (the deployment name) and a role `suffix`
 * (`queue`, `db`, ...): `<base>-<suffix>` when that is a valid label of at most `max`
 * characters. Otherwise the base is cleaned and truncated, and a short hash of the full
 * `<base>-<suffix>` keeps two long bases sharing a prefix from colliding; the suffix always
 * survives at the end, so the role stays readable in `kubectl get`.
 */
export function k8sName(base: string, suffix = '', max = K8S_NAME_MAX): string {
  const plain = suffix ? `${base}-${suffix}` : base;
  if (isDns1035Label(plain, max)) return plain;

  const hash = createHash('sha256').update(plain).digest('hex').slice(0, HASH_LENGTH);
  const cleanSuffix = clean(suffix);
  const tail = cleanSuffix ? `-${hash}-${cleanSuffix}` : `-${hash}`;
  if (tail.length >= max) throw new Error(`Suffix '${suffix}' leaves no room for a name of at most ${max} characters`);
  let head = clean(base);
  if (!/^[a-z]/.test(head)) head = `s-${head}`;
  head = trimDashes(head.slice(0, max - tail.length)) || 's';
  return `${head}${tail}`;
}

/** Lowercase alphanumerics and single dashes, no dash at either end. */
function clean(value: string): string {
  return trimDashes(value.toLowerCase().replace(/[^a-z0-9]+/g, '-'));
}

function trimDashes(value: string): string {
  return value.replace(/^-+|-+$/g, '');
}
