import { createHash, randomBytes } from 'node:crypto';

/** Every generated key starts with this, so leaked keys are easy to grep for and to spot. */
export const API_KEY_PREFIX = 'slw_';
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

export interface GeneratedApiKey {
  /** The full key: shown once, never stored. */
  key: string;
  /** The first characters, stored for display so a user can tell keys apart. */
  prefix: string;
  hash: string;
}

/**
 * API keys carry 256 bits of randomness, so a single SHA-256 is the right hash: a slow KDF adds
 * nothing against brute force of a key this long and would cost a KDF run per request.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}

export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: displayPrefix(key), hash: hashApiKey(key) };
}
