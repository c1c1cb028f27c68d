import { createHmac } from 'node:crypto';
import { deriveKey } from './secret-box.js';

const PURPOSE = 'secret-fingerprint';

/** 12 bytes of the MAC (16 base64url characters): enough that two values never collide by chance, too few to say anything else. */
const FINGERPRINT_BYTES = 12;

/**
 * A short opaque fingerprint of one secret's value (docs/api.md, Revisions): an HMAC under a key
 * derived from the secrets key over the deployment id, the name and the value, so whoever reads
 * two revisions can tell a value changed, yet cannot test guesses of a value offline (a plain
 * hash would let them), nor match one value across deployments or names. Each part is
 * length-prefixed so no two (name, value) pairs read alike.
 */
export function secretFingerprint(fingerprintKey: Buffer, deploymentId: string, name: string, value: string): string {
  const mac = createHmac('sha256', fingerprintKey);
  for (const part of [deploymentId.toLowerCase(), name, value]) {
    const bytes = Buffer.from(part, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    mac.update(length).update(bytes);
  }
  return mac.digest().subarray(0, FINGERPRINT_BYTES).toString('base64url');
}

/** The key fingerprints are made with, derived from a secrets key so no other use of it can stand in. */
export const fingerprintKey = (secretsKey: Buffer) => deriveKey(secretsKey, PURPOSE);
