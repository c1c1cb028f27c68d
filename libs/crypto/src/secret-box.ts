import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;

/** Short, stable fingerprint of a key, stored beside each ciphertext so keys can rotate. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/**
 * Envelope encryption of secrets at rest with AES-256-GCM. Sealed values read
 * `v1:<key id>:<iv>:<tag>:<ciphertext>` (base64url parts): the key id picks the key on open, so
 * old rows keep decrypting after the current key is rotated out to `previous`.
 */
export class SecretBox {
  private readonly currentId: string;
  private readonly keys = new Map<string, Buffer>();

  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (key.length !== 32) throw new Error('SecretBox keys must be 32 bytes');
      this.keys.set(keyId(key), key);
    }
    this.currentId = keyId(current);
  }

  /** The key id new values are sealed with. */
  get currentKeyId(): string {
    return this.currentId;
  }

  /**
   * Seals `plaintext`. `context` (e.g. the owning row's id) is bound as additional data, so a
   * ciphertext copied into another row does not decrypt there.
   */
  seal(plaintext: string, context = ''): string {
    const key = this.keys.get(this.currentId)!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [
      VERSION,
      this.currentId,
      iv.toString('base64url'),
      tag.toString('base64url'),
      ciphertext.toString('base64url'),
    ].join(':');
  }

  open(sealed: string, context = ''): string {
    const [version, kid, iv, tag, ciphertext] = sealed.split(':');
    if (version !== VERSION || !kid || iv === undefined || tag === undefined || ciphertext === undefined) {
      throw new Error('Not a sealed secret');
    }
    const key = this.keys.get(kid);
    if (!key) throw new Error(`Secret sealed with unknown key id ${kid}`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** The key id a sealed value was made with (for rotation jobs and tests). */
  static keyIdOf(sealed: string): string | undefined {
    return sealed.split(':')[1];
  }
}

/**
 * A key for one purpose derived from the master secrets key (HKDF-SHA256), so one configured
 * secret serves several uses without any use being able to stand in for another.
 */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `slipway/${purpose}`, 32));
}
