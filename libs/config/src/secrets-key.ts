/**
 * The key that seals secrets at rest (docs/configuration.md, Secrets): taken from the
 * environment, or outside production generated once into the data dir.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Joi from 'joi';
import { ConfigError } from './config-error.js';
import { listOf } from './lists.js';
import { optional, setting } from './setting.js';
import type { NodeEnv } from './server.js';

export interface SecretsKey {
  /** The raw 32-byte AES-256 key. */
  key: Buffer;
  /** Where it came from, so start-up can warn about a generated key. */
  origin: 'env' | 'file' | 'generated';
}

const SECRETS_KEY_FILE = 'secrets.key';

/** Canonical base64 of exactly 32 bytes. Buffer.from() alone skips junk characters silently. */
function isBase64Key(value: string): boolean {
  return /^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0 && Buffer.from(value, 'base64').length === 32;
}

export const secretsSettings = {
  // One rule, so a bad key is one problem, not "not base64" and "not 32 bytes" for the same key.
  secretsKey: optional(
    'SLIPWAY_SECRETS_KEY',
    Joi.string()
      .custom((value: string, helpers) => (isBase64Key(value) ? value : helpers.error('key.invalid')))
      .messages({ 'key.invalid': '{{#label}} must be a base64-encoded 32-byte key' }),
    '32 random bytes, base64 (`openssl rand -base64 32`); encrypts secrets at rest. Required in production',
    'generated into the data dir outside production',
  ),
  /** Keys that were current before a rotation: still used to decrypt, never to encrypt. */
  previousSecretsKeys: setting<Buffer[]>(
    'SLIPWAY_PREVIOUS_SECRETS_KEYS',
    Joi.string()
      .custom((value: string, helpers) => (listOf(value).every(isBase64Key) ? value : helpers.error('key.length')))
      .messages({ 'key.length': '{{#label}} must be a comma-separated list of 32-byte base64 keys' }),
    'comma-separated earlier keys, still used to decrypt after a rotation',
    { read: (raw?: string) => listOf(raw ?? '').map((k) => Buffer.from(k, 'base64')) },
  ),
};

/**
 * Outside production an unset SLIPWAY_SECRETS_KEY is generated once into the data dir, so a
 * fresh checkout starts without ceremony and keeps decrypting what it stored across restarts.
 */
export function resolveSecretsKey(fromEnv: string | undefined, nodeEnv: NodeEnv, dataDir: string): SecretsKey {
  if (fromEnv) return { key: Buffer.from(fromEnv, 'base64'), origin: 'env' };
  if (nodeEnv === 'production') {
    throw new ConfigError(['SLIPWAY_SECRETS_KEY is required when NODE_ENV=production']);
  }
  const file = path.join(dataDir, SECRETS_KEY_FILE);
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new ConfigError([`${file} does not hold a 32-byte base64 key`]);
    return { key, origin: 'file' };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // `wx` so two processes starting together cannot both write a different key.
  try {
    writeFileSync(file, key.toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return resolveSecretsKey(undefined, nodeEnv, dataDir);
    throw err;
  }
  chmodSync(file, 0o600);
  return { key, origin: 'generated' };
}
