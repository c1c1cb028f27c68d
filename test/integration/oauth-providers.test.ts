import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { TenancyRepository } from '@slipway/db';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

let api: TestApi;
/** Provider writes need an organization admin (an organization-scoped admin key). */
let admin: HttpClient;

beforeAll(async () => {
  api = await startTestApi();
  admin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
});
afterAll(async () => {
  await api?.close();
});

const ORGANIZATION_ADMIN_ONLY = {
  detail: 'This operation requires an organization admin: an organization-scoped admin API key.',
};
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Every client secret any test sends, so the last test can prove none of them reached a
 * response or the log. Random, so a hit can only come from our own request.
 */
const secretsSent: string[] = [];
function newSecret(): string {
  const secret = `cs-${randomBytes(18).toString('hex')}`;
  secretsSent.push(secret);
  return secret;
}

const body = (providerId: string, extra: Record<string, unknown> = {}) => ({
  provider_id: providerId,
  name: `Provider ${providerId}`,
  client_id: `client-${providerId}`,
  client_secret: newSecret(),
  auth_url: 'https://idp.example.com/oauth2/authorize',
  token_url: 'https://idp.example.com/oauth2/token',
  ...extra,
});

/** No response may carry a client secret, whatever its status. */
function expectNoSecret(res: { text: string }): void {
  for (const secret of secretsSent) expect(res.text).not.toContain(secret);
  // No member of that name either (a 422 may name the field in a `loc`, which is fine).
  expect(res.text).not.toMatch(/"client_secret\w*"\s*:/);
}

async function rowOf(id: string) {
  const [row] = await api.dataSource.query('SELECT * FROM oauth_providers WHERE id = $1', [id]);
  return row as Record<string, any> | undefined;
}

describe('POST /v2/auth/providers', () => {
  it('creates a provider with defaults and seals the secret', async () => {
    const payload = body('github');
    const res = await admin.post('/v2/auth/providers', payload);
    expect(res.status).toBe(201);
    expectNoSecret(res);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: api.organizationId,
      provider_id: 'github',
      name: 'Provider github',
      client_id: 'client-github',
      auth_url: 'https://idp.example.com/oauth2/authorize',
      token_url: 'https://idp.example.com/oauth2/token',
      uses_pkce: false,
      code_challenge_method: 'S256',
      provider_type: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });

    const row = (await rowOf(res.body.id))!;
    expect(row).toMatchObject({
      organization_id: api.organizationId,
      provider_id: 'github',
      client_id: 'client-github',
      uses_pkce: false,
      code_challenge_method: 'S256',
      provider_type: null,
    });
    expect(row.client_secret_sealed).not.toContain(payload.client_secret);
    expect(row.client_secret_sealed.startsWith('v1:')).toBe(true);
    expect(secretsCodec(api.config).open(row.client_secret_sealed, row.id)).toBe(payload.client_secret);
    // Bound to its row: the ciphertext does not open under another row's id.
    expect(() => secretsCodec(api.config).open(row.client_secret_sealed, randomUUID())).toThrow();
    // The plaintext is in no column at all.
    const [{ whole }] = await api.dataSource.query(
      'SELECT row_to_json(p)::text AS whole FROM oauth_providers p WHERE id = $1',
      [row.id],
    );
    expect(whole).not.toContain(payload.client_secret);
  });

  it('takes the optional fields and ignores unknown ones', async () => {
    const res = await admin.post(
      '/v2/auth/providers',
      body('okta', { uses_pkce: true, code_challenge_method: 'plain', provider_type: 'oidc', surprise: 1 }),
    );
    expect(res.status).toBe(201);
    expectNoSecret(res);
    expect(res.body).toMatchObject({ uses_pkce: true, code_challenge_method: 'plain', provider_type: 'oidc' });
    expect(res.body).not.toHaveProperty('surprise');
    expect(await rowOf(res.body.id)).toMatchObject({
      uses_pkce: true,
      code_challenge_method: 'plain',
      provider_type: 'oidc',
    });
  });

  it('allows plain http only for loopback hosts', async () => {
    for (const [providerId, host] of [
      ['local-v4', 'http://127.0.0.1:9000'],
      ['local-name', 'http://localhost:9000'],
      ['local-v6', 'http://[::1]:9000'],
    ]) {
      const res = await admin.post(
        '/v2/auth/providers',
        body(providerId, { auth_url: `${host}/authorize`, token_url: `${host}/token` }),
      );
      expect(res.status, host).toBe(201);
      expect(res.body).toMatchObject({ auth_url: `${host}/authorize`, token_url: `${host}/token` });
    }
  });

  it('requires every mandatory field', async () => {
    const res = await admin.post('/v2/auth/providers', {});
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc, d.type])).toEqual([
      [['body', 'provider_id'], 'missing'],
      [['body', 'name'], 'missing'],
      [['body', 'client_id'], 'missing'],
      [['body', 'client_secret'], 'missing'],
      [['body', 'auth_url'], 'missing'],
      [['body', 'token_url'], 'missing'],
    ]);
    for (const d of res.body.detail) expect(d.msg).toBe('Field required');
  });

  it('reports every bad field at once with loc and type', async () => {
    const secret = newSecret();
    const res = await admin.post('/v2/auth/providers', {
      provider_id: 'has space',
      name: '',
      client_id: 42,
      client_secret: secret,
      auth_url: 'http://idp.example.com/authorize',
      token_url: 'not a url',
      uses_pkce: 'maybe',
      code_challenge_method: 'S512',
    });
    expect(res.status).toBe(422);
    expectNoSecret(res);
    // One issue per bad field, in body order: a bad URL must not also fail the https rule.
    expect(res.body.detail.map((d: any) => [d.loc.join('.'), d.type])).toEqual([
      ['body.provider_id', 'string_pattern_mismatch'],
      ['body.name', 'string_too_short'],
      ['body.client_id', 'string_type'],
      ['body.auth_url', 'value_error'],
      ['body.token_url', 'url_scheme'],
      ['body.uses_pkce', 'bool_parsing'],
      ['body.code_challenge_method', 'enum'],
    ]);
    const insecure = res.body.detail.find((d: any) => d.loc[1] === 'auth_url');
    expect(insecure.msg).toMatch(/https/);
    const method = res.body.detail.find((d: any) => d.loc[1] === 'code_challenge_method');
    expect(method.msg).toBe("Input should be 'S256' or 'plain'");
    const [{ count }] = await api.dataSource.query(
      `SELECT count(*)::int AS count FROM oauth_providers WHERE provider_id = 'has space'`,
    );
    expect(count).toBe(0);
  });

  it.each([
    ['a non-loopback http host', 'http://10.0.0.1/token', 'value_error'],
    ['a host that only starts like localhost', 'http://localhost.evil.example/token', 'value_error'],
    ['a relative URL', '/oauth/token', 'url_scheme'],
    ['text that is no URL', 'not a url', 'url_scheme'],
    ['another scheme', 'ftp://idp.example.com/token', 'url_scheme'],
    ['a URL with an impossible port', 'https://idp.example.com:99999/token', 'url_parsing'],
  ])('rejects %s as token_url', async (_what, url, type) => {
    const res = await admin.post(
      '/v2/auth/providers',
      body(`bad-url-${randomBytes(3).toString('hex')}`, { token_url: url }),
    );
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'token_url'], type })]);
  });

  it('rejects a bad client_secret without echoing it', async () => {
    const long = newSecret().repeat(200);
    secretsSent.push(long);
    const res = await admin.post('/v2/auth/providers', body('long-secret', { client_secret: long }));
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', 'client_secret'], msg: 'String should have at most 4000 characters', type: 'string_too_long' },
    ]);
    expectNoSecret(res);
  });

  it('rejects a malformed JSON body without echoing or logging it', async () => {
    const secret = newSecret();
    const res = await api.http.request('POST', '/v2/auth/providers', {
      rawBody: `{"provider_id":"x","client_secret":"${secret}",`,
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] });
    expectNoSecret(res);
  });

  it('answers 409 on a duplicate provider_id in the organization', async () => {
    expect((await admin.post('/v2/auth/providers', body('dup'))).status).toBe(201);
    const res = await admin.post('/v2/auth/providers', body('dup', { name: 'Another' }));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: "OAuth provider with provider ID 'dup' already exists." });
    expectNoSecret(res);
    const rows = await api.dataSource.query(`SELECT name FROM oauth_providers WHERE provider_id = 'dup'`);
    expect(rows).toEqual([{ name: 'Provider dup' }]);
  });

  it('lets exactly one of several concurrent creates win', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => admin.post('/v2/auth/providers', body('race'))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of results) {
      expectNoSecret(r);
      if (r.status === 409)
        expect(r.body).toEqual({ detail: "OAuth provider with provider ID 'race' already exists." });
    }
    const [{ count }] = await api.dataSource.query(
      `SELECT count(*)::int AS count FROM oauth_providers WHERE provider_id = 'race'`,
    );
    expect(count).toBe(1);
  });
});

describe('GET /v2/auth/providers', () => {
  it('lists the organization providers newest first, without secrets', async () => {
    for (const n of [1, 2]) expect((await admin.post('/v2/auth/providers', body(`list-${n}`))).status).toBe(201);
    const res = await api.http.get('/v2/auth/providers');
    expect(res.status).toBe(200);
    expectNoSecret(res);
    expect(Array.isArray(res.body)).toBe(true);
    const ids = res.body.map((p: any) => p.provider_id);
    expect(ids).toContain('list-1');
    expect(ids.indexOf('list-2')).toBeLessThan(ids.indexOf('list-1'));
    const [{ count }] = await api.dataSource.query(
      'SELECT count(*)::int AS count FROM oauth_providers WHERE organization_id = $1',
      [api.organizationId],
    );
    expect(res.body).toHaveLength(count);
    for (const p of res.body) expect(Object.keys(p)).not.toContain('client_secret');
  });
});

describe('GET/PATCH/DELETE /v2/auth/providers/{provider_id}', () => {
  it('gets by provider_id and by id', async () => {
    const { body: created } = await admin.post('/v2/auth/providers', body('lookup'));
    const byProviderId = await api.http.get('/v2/auth/providers/lookup');
    expect(byProviderId.status).toBe(200);
    expect(byProviderId.body).toEqual(created);
    expectNoSecret(byProviderId);
    const byId = await api.http.get(`/v2/auth/providers/${created.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(created);
    expectNoSecret(byId);
    expect((await api.http.get(`/api-host/v2/auth/providers/lookup`)).body).toEqual(created);

    const dotted = await admin.post('/v2/auth/providers', body('corp.sso_v2-eu'));
    expect(dotted.status).toBe(201);
    expect((await api.http.get('/v2/auth/providers/corp.sso_v2-eu')).body).toEqual(dotted.body);
  });

  it('validates the path parameter', async () => {
    const res = await api.http.get(`/v2/auth/providers/${'p'.repeat(201)}`);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ loc: ['path', 'provider_id'], type: 'string_too_long' }),
    ]);
  });

  it('answers 404 with the contract text for an unknown provider', async () => {
    for (const ref of ['nope', randomUUID()]) {
      for (const [method, payload] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
        const res = await admin.request(method, `/v2/auth/providers/${ref}`, { body: payload });
        expect(res.status, `${method} ${ref}`).toBe(404);
        expect(res.body).toEqual({ detail: `OAuth provider ID ${ref} not found.` });
      }
    }
  });

  it('patches: null leaves required fields, clears nullable ones', async () => {
    const { body: created } = await admin.post(
      '/v2/auth/providers',
      body('patchy', { provider_type: 'oidc', uses_pkce: true }),
    );
    const path = '/v2/auth/providers/patchy';

    const unchanged = await admin.patch(path, {});
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toEqual(created);

    const res = await admin.patch(path, {
      name: null,
      client_id: null,
      uses_pkce: null,
      auth_url: null,
      code_challenge_method: null,
      provider_type: null,
    });
    expect(res.status).toBe(200);
    expectNoSecret(res);
    expect(res.body).toEqual({
      ...created,
      code_challenge_method: null,
      provider_type: null,
      updated_at: expect.stringMatching(ISO),
    });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect(await rowOf(created.id)).toMatchObject({
      name: 'Provider patchy',
      client_id: 'client-patchy',
      uses_pkce: true,
      code_challenge_method: null,
      provider_type: null,
    });

    const renamed = await admin.patch(path, {
      name: 'Renamed',
      token_url: 'https://idp2.example.com/token',
      code_challenge_method: 'S256',
      uses_pkce: false,
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      provider_id: 'patchy',
      name: 'Renamed',
      token_url: 'https://idp2.example.com/token',
      auth_url: created.auth_url,
      code_challenge_method: 'S256',
      uses_pkce: false,
    });
    expect((await api.http.get(`/v2/auth/providers/${created.id}`)).body).toEqual(renamed.body);
  });

  it('rotates the client secret: new ciphertext that opens to the new value', async () => {
    const first = body('rotate');
    const { body: created } = await admin.post('/v2/auth/providers', first);
    const before = (await rowOf(created.id))!.client_secret_sealed;

    const second = newSecret();
    const res = await admin.patch('/v2/auth/providers/rotate', { client_secret: second });
    expect(res.status).toBe(200);
    expectNoSecret(res);
    expect(res.body).not.toHaveProperty('client_secret');

    const after = (await rowOf(created.id))!.client_secret_sealed;
    expect(after).not.toBe(before);
    expect(after.startsWith('v1:')).toBe(true);
    expect(after).not.toContain(second);
    const box = secretsCodec(api.config);
    expect(box.open(after, created.id)).toBe(second);

    // A null secret leaves the stored one alone.
    expect((await admin.patch('/v2/auth/providers/rotate', { client_secret: null, name: 'kept' })).status).toBe(200);
    expect((await rowOf(created.id))!.client_secret_sealed).toBe(after);
  });

  it('validates PATCH fields and the body', async () => {
    await admin.post('/v2/auth/providers', body('strict'));
    const res = await admin.patch('/v2/auth/providers/strict', {
      auth_url: 'http://idp.example.com/authorize',
      code_challenge_method: 'S1',
      name: '',
      uses_pkce: 'sometimes',
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc.join('.'), d.type])).toEqual([
      ['body.name', 'string_too_short'],
      ['body.auth_url', 'value_error'],
      ['body.uses_pkce', 'bool_parsing'],
      ['body.code_challenge_method', 'enum'],
    ]);
    const missing = await admin.request('PATCH', '/v2/auth/providers/strict');
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ['body'], type: 'missing' })]);
    const row = await api.dataSource.query(
      `SELECT auth_url, code_challenge_method FROM oauth_providers WHERE provider_id = 'strict'`,
    );
    expect(row).toEqual([{ auth_url: 'https://idp.example.com/oauth2/authorize', code_challenge_method: 'S256' }]);
  });

  it('deletes by provider_id and by id', async () => {
    const { body: a } = await admin.post('/v2/auth/providers', body('delete-a'));
    const { body: b } = await admin.post('/v2/auth/providers', body('delete-b'));

    const byProviderId = await admin.delete('/v2/auth/providers/delete-a');
    expect(byProviderId.status).toBe(204);
    expect(byProviderId.text).toBe('');
    expect(await rowOf(a.id)).toBeUndefined();
    expect((await api.http.get('/v2/auth/providers/delete-a')).status).toBe(404);
    const again = await admin.delete('/v2/auth/providers/delete-a');
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: 'OAuth provider ID delete-a not found.' });

    expect((await admin.delete(`/v2/auth/providers/${b.id}`)).status).toBe(204);
    expect(await rowOf(b.id)).toBeUndefined();
    // The provider_id is free again.
    expect((await admin.post('/v2/auth/providers', body('delete-a'))).status).toBe(201);
  });
});

describe('organization isolation', () => {
  it("never shows or changes another organization's providers", async () => {
    const { body: mine } = await admin.post('/v2/auth/providers', body('shared-name'));
    const { organization } = await new TenancyRepository(api.dataSource.manager).createOrganization('other');
    const otherKey = await api.mintKey({
      organizationId: organization.id,
      workspaceId: null,
      scope: 'organization',
      role: 'admin',
    });
    const other = api.http.as(otherKey);

    const list = await other.get('/v2/auth/providers');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
    for (const ref of ['shared-name', mine.id]) {
      expect((await other.get(`/v2/auth/providers/${ref}`)).body).toEqual({
        detail: `OAuth provider ID ${ref} not found.`,
      });
      expect((await other.patch(`/v2/auth/providers/${ref}`, { name: 'hijacked' })).status).toBe(404);
      expect((await other.delete(`/v2/auth/providers/${ref}`)).status).toBe(404);
    }
    expect(await rowOf(mine.id)).toMatchObject({ name: 'Provider shared-name' });

    // provider_id is unique per organization, not globally.
    const theirs = await other.post('/v2/auth/providers', body('shared-name'));
    expect(theirs.status).toBe(201);
    expect(theirs.body.organization_id).toBe(organization.id);
    expect((await other.get('/v2/auth/providers/shared-name')).body.id).toBe(theirs.body.id);
    expect((await api.http.get('/v2/auth/providers/shared-name')).body.id).toBe(mine.id);
    expect((await api.http.get(`/v2/auth/providers/${theirs.body.id}`)).status).toBe(404);
  });
});

describe('workspace admins', () => {
  it('can read but not write: providers belong to the whole organization', async () => {
    const { body: created } = await admin.post('/v2/auth/providers', body('org-owned'));
    const workspaceAdmin = api.http;
    expect((await workspaceAdmin.get('/v2/auth/providers/org-owned')).body).toEqual(created);
    for (const [method, path, payload] of [
      ['POST', '/v2/auth/providers', body('by-workspace-admin')],
      ['PATCH', '/v2/auth/providers/org-owned', { name: 'renamed', client_secret: newSecret() }],
      ['DELETE', '/v2/auth/providers/org-owned', undefined],
    ] as const) {
      const res = await workspaceAdmin.request(method, path, { body: payload });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual(ORGANIZATION_ADMIN_ONLY);
    }
    expect(await rowOf(created.id)).toMatchObject({ name: 'Provider org-owned' });
    expect(
      await api.dataSource.query(`SELECT 1 FROM oauth_providers WHERE provider_id = 'by-workspace-admin'`),
    ).toEqual([]);
  });
});

describe('member keys', () => {
  it('can read but not write', async () => {
    const { body: created } = await admin.post('/v2/auth/providers', body('members'));
    const member = api.http.as(await api.mintKey({ role: 'member' }));

    const list = await member.get('/v2/auth/providers');
    expect(list.status).toBe(200);
    expect(list.body.map((p: any) => p.id)).toContain(created.id);
    expectNoSecret(list);
    const got = await member.get('/v2/auth/providers/members');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);

    const post = await member.post('/v2/auth/providers', body('by-member'));
    expect(post.status).toBe(403);
    expect(post.body).toEqual(ORGANIZATION_ADMIN_ONLY);
    const patch = await member.patch('/v2/auth/providers/members', { name: 'by member', client_secret: newSecret() });
    expect(patch.status).toBe(403);
    expect(patch.body).toEqual(ORGANIZATION_ADMIN_ONLY);
    const del = await member.delete('/v2/auth/providers/members');
    expect(del.status).toBe(403);
    expect(del.body).toEqual(ORGANIZATION_ADMIN_ONLY);

    const sealedBefore = (await rowOf(created.id))!.client_secret_sealed;
    expect(await rowOf(created.id)).toMatchObject({ name: 'Provider members', client_secret_sealed: sealedBefore });
    expect(await api.dataSource.query(`SELECT 1 FROM oauth_providers WHERE provider_id = 'by-member'`)).toEqual([]);
  });

  it('answers 401 without a key', async () => {
    for (const [method, path] of [
      ['GET', '/v2/auth/providers'],
      ['POST', '/v2/auth/providers'],
      ['GET', '/v2/auth/providers/x'],
      ['PATCH', '/v2/auth/providers/x'],
      ['DELETE', '/v2/auth/providers/x'],
    ] as const) {
      const res = await api.http.request(method, path, {
        key: null,
        body: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body).toEqual({ detail: 'Invalid or missing API key.' });
    }
  });
});

// Last on purpose: by now every success and failure path above has written its log lines.
describe('secret hygiene', () => {
  it('never logs a client secret', async () => {
    expect(secretsSent.length).toBeGreaterThan(10);
    const logged = api.logs.text();
    // The capture did see this file's requests, failures included, so its silence means something.
    const requests = api.logs.lines().map((l: any) => [l.req?.method, l.req?.url, l.res?.statusCode]);
    expect(requests).toContainEqual(['POST', '/v2/auth/providers', 201]);
    expect(requests).toContainEqual(['POST', '/v2/auth/providers', 422]);
    expect(requests).toContainEqual(['PATCH', '/v2/auth/providers/rotate', 200]);
    for (const secret of secretsSent) expect(logged).not.toContain(secret);
    expect(logged).not.toMatch(/client_secret_sealed|clientSecretSealed/);
  });
});
