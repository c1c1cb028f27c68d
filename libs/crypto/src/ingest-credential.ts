import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from './secret-box.js';

/**
 * Every trace-ingest credential starts with this: it is not an API key (`slw_`), and nothing but
 * a deployment's trace front takes it.
 */
export const INGEST_CREDENTIAL_PREFIX = 'slwt_';

const PURPOSE = 'trace-ingest';

/**
 * The trace-ingest credential of a deployment (`LANGSMITH_API_KEY` in its instances): an HMAC of
 * its id under a key derived from the secrets key, so minting one writes nothing and costs a
 * create nothing. It opens one door only: writing runs into that deployment's tracing project
 * through its trace front.
 */
export function ingestCredential(secretsKey: Buffer, deploymentId: string): string {
  return INGEST_CREDENTIAL_PREFIX + mac(secretsKey, deploymentId).toString('base64url');
}

/**
 * Whether `candidate` is the deployment's credential under any of `secretsKeys` (the current
 * key and the rotated-out ones, so instances started before a rotation keep tracing).
 */
export function isIngestCredential(candidate: string | undefined, secretsKeys: readonly Buffer[], deploymentId: string): boolean {
  if (!candidate?.startsWith(INGEST_CREDENTIAL_PREFIX)) return false;
  const given = Buffer.from(candidate.slice(INGEST_CREDENTIAL_PREFIX.length), 'base64url');
  let found = false;
  for (const key of secretsKeys) {
    const expected = mac(key, deploymentId);
    // Every key is compared, in constant time, whatever the first one said.
    if (given.length === expected.length && timingSafeEqual(given, expected)) found = true;
  }
  return found;
}

function mac(secretsKey: Buffer, deploymentId: string): Buffer {
  return createHmac('sha256', deriveKey(secretsKey, PURPOSE)).update(deploymentId.toLowerCase()).digest();
}
