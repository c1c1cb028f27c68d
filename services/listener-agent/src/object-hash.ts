import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * The annotation holding the hash of what the agent last applied to an object. It lives on the
 * object itself, so an agent that restarts (or a second replica) knows without any local state
 * whether an object already is as desired, and skips the apply.
 */
export const APPLIED_HASH_ANNOTATION = 'slipway.dev/applied-hash';

/** JSON with object keys sorted: the same object always gives the same text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * sha256 of a desired object. A Secret's hash covers its data; it is stored on that same
 * Secret, so whoever can read the hash can read the values anyway.
 */
export function desiredHash(object: KubernetesObject): string {
  return createHash('sha256').update(canonical(object)).digest('hex');
}

/** The object as applied: its desired content plus the annotation recording its hash. */
export function withAppliedHash(object: KubernetesObject, hash: string): KubernetesObject {
  return {
    ...object,
    metadata: { ...object.metadata, annotations: { ...object.metadata?.annotations, [APPLIED_HASH_ANNOTATION]: hash } },
  };
}

export const objectKey = (o: KubernetesObject) =>
  `${o.apiVersion}/${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
