import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { secretsCodec } from './secrets-codec.js';

const keys = () => ({ secretsKey: { key: randomBytes(32) }, previousSecretsKeys: [] as Buffer[] });

describe('the secrets codec', () => {
  it('seals JSON and named secrets bound to their row, and opens them back', () => {
    const codec = secretsCodec(keys());
    expect(codec.openJson(codec.sealJson({ token: 't' }, 'row-1'), 'row-1')).toEqual({ token: 't' });
    const sealed = codec.sealSecrets([{ name: 'A', value: '1' }], 'rev-1');
    expect(codec.openSecrets(sealed, 'rev-1')).toEqual([{ name: 'A', value: '1' }]);
    expect(() => codec.openSecrets(sealed, 'rev-2')).toThrow();
  });

  it('stores no secrets as null, and opens null as none', () => {
    const codec = secretsCodec(keys());
    expect(codec.sealSecrets([], 'rev-1')).toBeNull();
    expect(codec.openSecrets(null, 'rev-1')).toEqual([]);
  });

  it('opens what a rotated-out key sealed, and seals with the current key', () => {
    const old = keys();
    const sealed = secretsCodec(old).seal('v', 'ctx');
    const rotated = secretsCodec({ secretsKey: { key: randomBytes(32) }, previousSecretsKeys: [old.secretsKey.key] });
    expect(rotated.open(sealed, 'ctx')).toBe('v');
    expect(rotated.seal('v', 'ctx')).toContain(`:${rotated.currentKeyId}:`);
  });
});
