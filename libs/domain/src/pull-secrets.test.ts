import { describe, expect, it } from 'vitest';
import { credentialForms, pullCredential, pullSecretProblems } from './pull-secrets.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const config = (auths: Record<string, unknown>) => JSON.stringify({ auths });

describe('image pull secrets', () => {
  const secrets = [
    { name: 'HUB', value: config({ 'https://index.docker.io/v1/': { auth: b64('hubuser:hub:pass') } }) },
    {
      name: 'PRIVATE',
      value: config({
        'registry.example:5000': { username: 'alice', password: 's3cret' },
        'other.example': { auth: b64('bob:pw') },
      }),
    },
    { name: 'PAIR', value: 'carol:pa:ss' },
    { name: 'OBJECT', value: JSON.stringify({ username: 'dave', password: 'pw4' }) },
  ];

  it("picks the Docker config entry of the image's registry host, first match in list order", () => {
    expect(pullCredential([{ name: 'HUB' }, { name: 'PRIVATE' }], secrets, 'registry.example:5000')).toEqual({
      username: 'alice',
      password: 's3cret',
    });
    expect(pullCredential([{ name: 'PRIVATE' }], secrets, 'OTHER.example')).toEqual({
      username: 'bob',
      password: 'pw',
    });
    // Docker Hub's aliases are one registry; a password may hold colons.
    expect(pullCredential([{ name: 'HUB' }], secrets, 'docker.io')).toEqual({
      username: 'hubuser',
      password: 'hub:pass',
    });
    // No entry for the host: anonymous (null), as Kubernetes ignores other registries' secrets.
    expect(pullCredential([{ name: 'PRIVATE' }], secrets, 'ghcr.io')).toBeNull();
    expect(pullCredential([], secrets, 'ghcr.io')).toBeNull();
  });

  it('takes user:password and {username,password} for whatever registry the image is on', () => {
    expect(pullCredential([{ name: 'PRIVATE' }, { name: 'PAIR' }], secrets, 'ghcr.io')).toEqual({
      username: 'carol',
      password: 'pa:ss',
    });
    expect(pullCredential([{ name: 'OBJECT' }], secrets, 'ghcr.io')).toEqual({ username: 'dave', password: 'pw4' });
  });

  it('names an unknown secret or a value in neither format by its index, never quoting the value', () => {
    const bad = [
      ...secrets,
      { name: 'WORD', value: 'justaword' },
      { name: 'JSON', value: '{"auths": {"x.example": {"auth": "bm9jb2xvbg=="}}}' },
      { name: 'BROKEN', value: '{nope' },
    ];
    const problems = pullSecretProblems(
      [{ name: 'PAIR' }, { name: 'MISSING' }, { name: 'WORD' }, { name: 'JSON' }, { name: 'BROKEN' }],
      bad,
    );
    expect(problems.map((p) => p.index)).toEqual([1, 2, 3, 4]);
    expect(problems[0]!.message).toBe("no secret named 'MISSING' among the deployment's secrets");
    expect(problems.map((p) => p.message).join('\n')).not.toMatch(/justaword|bm9jb2xvbg|\{nope/);
    expect(() => pullCredential([{ name: 'MISSING' }], secrets, 'ghcr.io')).toThrow(
      "resource_spec.image_pull_secrets[0].name: no secret named 'MISSING'",
    );
  });

  it('masks the password, user:password and its base64', () => {
    expect(credentialForms({ username: 'u', password: 'p@ss' })).toEqual(['p@ss', 'u:p@ss', b64('u:p@ss')]);
  });
});
