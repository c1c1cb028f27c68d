import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time comparison of two secrets of any length (hashed first, so lengths leak nothing). */
export function equalSecret(given: string | Buffer, expected: string): boolean {
  const digest = (v: string | Buffer) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
