import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The key that signs registry tokens. Kept like the secrets key: one PKCS#8 PEM file, created
 * 0600 on first use (`wx`, so two processes starting together cannot write two keys).
 */
export function loadOrCreateSigningKey(file: string): KeyObject {
  if (existsSync(file)) return checked(createPrivateKey(readFileSync(file, 'utf8')), file);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  try {
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateSigningKey(file);
    throw err;
  }
  chmodSync(file, 0o600);
  return privateKey;
}

function checked(key: KeyObject, file: string): KeyObject {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error(`${file} must hold an EC P-256 private key (ES256)`);
  }
  return key;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The libtrust key id distribution looks a token's `kid` up by: SHA-256 of the DER
 * SubjectPublicKeyInfo, its first 30 bytes in base32 (no padding), in 4-character groups joined by `:`.
 */
export function libtrustKeyId(key: KeyObject): string {
  const spki = (key.type === 'private' ? createPublicKey(key) : key).export({ type: 'spki', format: 'der' });
  const id = base32(createHash('sha256').update(spki).digest().subarray(0, 30));
  return id.match(/.{1,4}/g)!.join(':');
}

// ---- a minimal self-signed X.509 certificate: the registry's `rootcertbundle` takes certificates only.

const der = (tag: number, content: Buffer): Buffer => {
  const n = content.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
};
const seq = (...parts: Buffer[]) => der(0x30, Buffer.concat(parts));
const oid = (hex: string) => der(0x06, Buffer.from(hex, 'hex'));
const ECDSA_WITH_SHA256 = seq(oid('2a8648ce3d040302'));
const utcTime = (date: Date) => der(0x17, Buffer.from(date.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'));
const commonName = (cn: string) => seq(der(0x31, seq(oid('550403'), der(0x0c, Buffer.from(cn)))));

/** A self-signed certificate (PEM) of `key`'s public key, valid from `notBefore` for ten years. */
export function selfSignedCertificate(
  key: KeyObject,
  cn = 'slipway registry token issuer',
  notBefore = new Date(Date.now() - 86_400_000),
): string {
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const serial = der(
    0x02,
    Buffer.concat([Buffer.from([0x01]), createHash('sha256').update(spki).digest().subarray(0, 15)]),
  );
  const notAfter = new Date(notBefore.getTime() + 3650 * 86_400_000);
  const name = commonName(cn);
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))),
    serial,
    ECDSA_WITH_SHA256,
    name,
    seq(utcTime(notBefore), utcTime(notAfter)),
    name,
    spki,
  );
  const signature = sign('sha256', tbs, key); // DER-encoded ECDSA, as X.509 wants
  const cert = seq(tbs, ECDSA_WITH_SHA256, der(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const b64 = cert
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}
