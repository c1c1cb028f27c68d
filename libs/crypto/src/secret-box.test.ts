import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from './secret-box.js';
import { generateApiKey, hashApiKey } from './api-key.js';

describe('SecretBox', () => {
  it('round-trips and never stores the plaintext', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('hunter2-very-secret', 'row-1');
    expect(sealed).not.toContain('hunter2');
    expect(box.open(sealed, 'row-1')).toBe('hunter2-very-secret');
  });

  it('uses a fresh IV per seal', () => {
    const box = new SecretBox(randomBytes(32));
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('refuses a ciphertext moved to another context or tampered with', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('value', 'row-1');
    expect(() => box.open(sealed, 'row-2')).toThrow();
    const parts = sealed.split(':');
    parts[4] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join(':'), 'row-1')).toThrow();
  });

  it('decrypts with a rotated-out key and seals with the current one', () => {
    const oldKey = randomBytes(32);
    const sealedOld = new SecretBox(oldKey).seal('v');
    const rotated = new SecretBox(randomBytes(32), [oldKey]);
    expect(rotated.open(sealedOld)).toBe('v');
    expect(SecretBox.keyIdOf(rotated.seal('v'))).toBe(rotated.currentKeyId);
    expect(rotated.currentKeyId).not.toBe(SecretBox.keyIdOf(sealedOld));
    expect(() => new SecretBox(randomBytes(32)).open(sealedOld)).toThrow(/unknown key id/);
  });
});

describe('API keys', () => {
  it('generates distinct high-entropy keys whose hash matches', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.key).not.toBe(b.key);
    expect(a.key.length).toBeGreaterThanOrEqual(4 + 43);
    expect(a.hash).toBe(hashApiKey(a.key));
    expect(a.key.startsWith(a.prefix)).toBe(true);
  });
});

describe('deriveKey', () => {
  it('derives distinct, stable 32-byte keys per purpose', async () => {
    const { deriveKey } = await import('./secret-box.js');
    const master = randomBytes(32);
    expect(deriveKey(master, 'a')).toHaveLength(32);
    expect(deriveKey(master, 'a').equals(deriveKey(master, 'a'))).toBe(true);
    expect(deriveKey(master, 'a').equals(deriveKey(master, 'b'))).toBe(false);
    expect(deriveKey(master, 'a').equals(deriveKey(randomBytes(32), 'a'))).toBe(false);
  });
});
