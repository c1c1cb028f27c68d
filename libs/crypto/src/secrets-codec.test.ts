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

describe('secret fingerprints', () => {
  it('are equal for the same value, differ when the value, name, deployment or key differ, and hold no value', () => {
    const k = keys();
    const codec = secretsCodec(k);
    const a = codec.fingerprints([{ name: 'GREETING', value: 'a' }], 'd-1');
    expect(secretsCodec(k).fingerprints([{ name: 'GREETING', value: 'a' }], 'd-1')).toEqual(a);
    expect(a.GREETING).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(codec.fingerprints([{ name: 'GREETING', value: 'b' }], 'd-1').GREETING).not.toBe(a.GREETING);
    expect(codec.fingerprints([{ name: 'OTHER', value: 'a' }], 'd-1').OTHER).not.toBe(a.GREETING);
    expect(codec.fingerprints([{ name: 'GREETING', value: 'a' }], 'd-2').GREETING).not.toBe(a.GREETING);
    expect(secretsCodec(keys()).fingerprints([{ name: 'GREETING', value: 'a' }], 'd-1').GREETING).not.toBe(a.GREETING);
    // Length-prefixed parts: moving a character from the name into the value is another input.
    expect(codec.fingerprints([{ name: 'AB', value: 'c' }], 'd-1').AB).not.toBe(
      codec.fingerprints([{ name: 'A', value: 'Bc' }], 'd-1').A,
    );
  });
});
