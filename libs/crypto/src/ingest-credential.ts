import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from './secret-box.js';

/**
 * Every trace-ingest credential starts with this: it is not an API key (`slw_`), and nothing but
 * a deployment's trace front takes it.
 */
export const INGEST_CREDENTIAL_PREFIX = 'slwt_';

const PURPOSE = 'trace-ingest';

/**
 * The trace-ingest credential of a deployment (`LANGSMITH_API_KEY` in its instances):
 * `slwt_<deployment id, 32 hex>_<HMAC of it under a key derived from the secrets key>`, so
 * minting one writes nothing and costs a create nothing, and whoever checks it can tell which
 * deployment it claims. It opens one door only: writing runs into that deployment's tracing
 * project (through its trace front, or the api's ingest for pods a trace front cannot serve).
 */
export function ingestCredential(secretsKey: Buffer, deploymentId: string): string {
  return `${INGEST_CREDENTIAL_PREFIX}${compact(deploymentId)}_${mac(secretsKey, deploymentId).toString('base64url')}`;
}

/**
 * The deployment a credential claims to be of (a uuid), or null when it is not shaped as one; claims only: check it
 * with `isIngestCredential`.
 */
export function ingestCredentialDeployment(candidate: string | undefined): string | null {
  const m = /^slwt_([0-9a-f]{32})_[A-Za-z0-9_-]{43}$/.exec(candidate ?? '');
  if (!m) return null;
  const h = m[1]!;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Whether `candidate` is the deployment's credential under any of `secretsKeys` (the current
 * key and the rotated-out ones, so instances started before a rotation keep tracing).
 */
export function isIngestCredential(
  candidate: string | undefined,
  secretsKeys: readonly Buffer[],
  deploymentId: string,
): boolean {
  if (ingestCredentialDeployment(candidate) !== deploymentId.toLowerCase()) return false;
  // After `slwt_`, the 32 hex digits of the id and `_` (the MAC's own alphabet has `_` in it).
  const given = Buffer.from(candidate!.slice(INGEST_CREDENTIAL_PREFIX.length + 33), 'base64url');
  let found = false;
  for (const key of secretsKeys) {
    const expected = mac(key, deploymentId);
    // Every key is compared, in constant time, whatever the first one said.
    if (given.length === expected.length && timingSafeEqual(given, expected)) found = true;
  }
  return found;
}

const compact = (deploymentId: string) => deploymentId.toLowerCase().replaceAll('-', '');

/** The MAC key derived from each secrets key, once: credentials are checked on every ingest request. */
const macKeys = new WeakMap<Buffer, Buffer>();

function mac(secretsKey: Buffer, deploymentId: string): Buffer {
  let key = macKeys.get(secretsKey);
  if (!key) macKeys.set(secretsKey, (key = deriveKey(secretsKey, PURPOSE)));
  return createHmac('sha256', key).update(deploymentId.toLowerCase()).digest();
}
