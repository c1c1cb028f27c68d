import { describe, expect, it } from 'vitest';
import { platformCredentials, urlPasswords } from './credentials.js';

describe('urlPasswords', () => {
  it('gives the password as written and decoded, and nothing for a URL without one', () => {
    expect(urlPasswords('postgres://slipway:p%40ss%2Fw0rd@db:5432/slipway')).toEqual(['p%40ss%2Fw0rd', 'p@ss/w0rd']);
    expect(urlPasswords('redis://:plain-pass@redis:6379/0')).toEqual(['plain-pass']);
    expect(urlPasswords('redis://default:abc123def@redis:6379')).toEqual(['abc123def']);
    expect(urlPasswords('postgres://slipway@db/slipway')).toEqual([]);
    expect(urlPasswords('not a url')).toEqual([]);
  });
});

describe('platformCredentials', () => {
  it('lists the store passwords, the secrets keys and the bootstrap key', () => {
    const key = Buffer.alloc(32, 1);
    const previous = Buffer.alloc(32, 2);
    expect(
      platformCredentials({
        databaseUrl: 'postgres://slipway:db-secret@db/slipway',
        redisUrl: 'redis://:redis-secret@redis:6379/0',
        secretsKey: { key, origin: 'env' },
        previousSecretsKeys: [previous],
        bootstrapApiKey: 'slw_bootstrap-key-value',
      }),
    ).toEqual([
      'db-secret',
      'redis-secret',
      key.toString('base64'),
      previous.toString('base64'),
      'slw_bootstrap-key-value',
    ]);
  });
});
