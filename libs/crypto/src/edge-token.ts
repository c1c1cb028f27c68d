import { timingSafeEqual } from 'node:crypto';
import { deriveKey } from './secret-box.js';

/**
 * What the edge sends a deployment's serving proxy with each request it forwards (header
 * `x-slipway-edge`), so the proxy may take the client address and scheme the edge names: a key
 * derived from the secrets key, which every control-plane process holds and nothing deployed
 * ever sees. A request without it (or with a wrong one) is a direct caller of the serving port,
 * judged by its own socket.
 */
export function edgeToken(secretsKey: Buffer): string {
  return deriveKey(secretsKey, 'edge-forwarding').toString('base64url');
}

/** Whether `candidate` is the edge token under any of `secretsKeys` (current and rotated-out), compared in constant time. */
export function isEdgeToken(candidate: string | undefined, tokens: readonly string[]): boolean {
  if (typeof candidate !== 'string') return false;
  const given = Buffer.from(candidate);
  let found = false;
  for (const token of tokens) {
    const expected = Buffer.from(token);
    if (given.length === expected.length && timingSafeEqual(given, expected)) found = true;
  }
  return found;
}
