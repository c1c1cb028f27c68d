import { createPublicKey, generateKeyPairSync, verify, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deploymentOfRepository, parseImageReference } from './repositories.js';
import { libtrustKeyId, selfSignedCertificate } from './signing-key.js';
import { parseScopes, signRegistryToken } from './token.js';

const ID = '6f1c2b9e-0a1d-4c3e-9f00-123456789abc';

describe('libtrust key id', () => {
  it('is base32 of the first 30 bytes of SHA-256(SPKI DER), 12 groups of 4', () => {
    // A fixed P-256 public key. Its SPKI's SHA-256 is 8e2b446b…; the id below was computed apart
    // with Python's base64.b32encode (distribution accepting such ids: test/integration/registry.test.ts).
    const jwk = {
      kty: 'EC',
      crv: 'P-256',
      x: 'WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis',
      y: 'y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE',
    };
    const key = createPublicKey({ key: jwk, format: 'jwk' });
    const id = libtrustKeyId(key);
    expect(id).toBe('RYVU:I2ZO:DIMN:4K36:646F:3AH7:UQCZ:RAXY:GEY5:T3EC:FWLS:GREH');
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    expect(libtrustKeyId(other)).toBe(libtrustKeyId(createPublicKey(other)));
    expect(libtrustKeyId(other)).not.toBe(id);
  });
});

describe('token-issuer certificate', () => {
  it("is a valid self-signed X.509 certificate of the signing key's public key", () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const cert = new X509Certificate(selfSignedCertificate(privateKey));
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.export({ format: 'jwk' })).toEqual(publicKey.export({ format: 'jwk' }));
    expect(new Date(cert.validTo).getTime()).toBeGreaterThan(Date.now() + 365 * 86_400_000);
  });
});

describe('registry tokens', () => {
  it('carry kid, a string aud and a raw r||s ES256 signature', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { token } = signRegistryToken(privateKey, {
      subject: 's',
      access: [{ type: 'repository', name: `${ID}/web`, actions: ['pull'] }],
      ttlSeconds: 60,
    });
    const [h, c, sig] = token.split('.');
    const header = JSON.parse(Buffer.from(h!, 'base64url').toString());
    const claims = JSON.parse(Buffer.from(c!, 'base64url').toString());
    expect(header).toEqual({ typ: 'JWT', alg: 'ES256', kid: libtrustKeyId(privateKey) });
    expect(claims).toMatchObject({
      iss: 'slipway',
      aud: 'slipway-registry',
      sub: 's',
      access: [{ type: 'repository', name: `${ID}/web`, actions: ['pull'] }],
    });
    expect(claims.exp - claims.iat).toBe(60);
    const signature = Buffer.from(sig!, 'base64url');
    expect(signature).toHaveLength(64);
    expect(verify('sha256', Buffer.from(`${h}.${c}`), { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature)).toBe(
      true,
    );
  });

  it('scopes parse from repeated and space-separated values; names may hold a host port', () => {
    expect(
      parseScopes([
        `repository:${ID}/web:pull,push`,
        'repository:a/b:pull registry:catalog:*',
        'repository:host:5000/x:pull',
        'junk',
      ]),
    ).toEqual([
      { type: 'repository', name: `${ID}/web`, actions: ['pull', 'push'] },
      { type: 'repository', name: 'a/b', actions: ['pull'] },
      { type: 'registry', name: 'catalog', actions: ['*'] },
      { type: 'repository', name: 'host:5000/x', actions: ['pull'] },
    ]);
  });
});

describe('repositories of a deployment', () => {
  it('are <deployment id>/<one segment> only', () => {
    expect(deploymentOfRepository(`${ID}/web`)).toBe(ID);
    expect(deploymentOfRepository(`${ID}/web-app_2.x`)).toBe(ID);
    for (const name of [ID, `${ID}/a/b`, `${ID}/`, `${ID}/Web`, `x${ID}/web`, 'library/web', `${ID}/-web`])
      expect(deploymentOfRepository(name), name).toBeNull();
  });

  it('image references parse by tag or digest', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(parseImageReference(`127.0.0.1:8130/${ID}/web:v1`)).toEqual({
      registry: '127.0.0.1:8130',
      repository: `${ID}/web`,
      tag: 'v1',
      digest: null,
    });
    expect(parseImageReference(`127.0.0.1:8130/${ID}/web@${digest}`)).toEqual({
      registry: '127.0.0.1:8130',
      repository: `${ID}/web`,
      tag: null,
      digest,
    });
    expect(parseImageReference(`127.0.0.1:8130/${ID}/web`)).toMatchObject({ tag: 'latest' });
    for (const bad of [
      'web',
      `127.0.0.1:8130/${ID}/web@sha256:short`,
      `127.0.0.1:8130/${ID}/Web:v1`,
      `127.0.0.1:8130/${ID}/web:bad tag`,
    ]) {
      expect(parseImageReference(bad), bad).toBeNull();
    }
  });
});
