import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '@slipway/crypto';
import { TenancyRepository } from '@slipway/db';
import { startTestApi, type TestApi } from '../support/test-api.js';

const UNAUTHORIZED = { detail: 'Invalid or missing API key.' };
const ORG_SCOPED = {
  detail: "This API key is org-scoped and requires workspace specification. Please provide 'X-Tenant-Id' header.",
};
const ADMIN_ONLY = { detail: 'This operation requires an admin API key.' };
const ORGANIZATION_ADMIN_ONLY = {
  detail: 'This operation requires an organization admin: an organization-scoped admin API key.',
};
const LISTENER_KEY_REFUSED = {
  detail: 'This API key belongs to a listener agent and can only call the listener agent endpoints.',
};

const listenerBody = (computeId: string) => ({
  compute_type: 'k8s',
  compute_id: computeId,
  compute_config: { k8s_namespaces: null },
});
const providerBody = (providerId: string) => ({
  provider_id: providerId,
  name: providerId,
  client_id: 'client',
  client_secret: `secret-${randomBytes(8).toString('hex')}`,
  auth_url: 'https://idp.example.com/authorize',
  token_url: 'https://idp.example.com/token',
});

async function keyRow(api: TestApi, key: string) {
  const [row] = await api.dataSource.query('SELECT id, last_used_at, revoked_at FROM api_keys WHERE key_hash = $1', [
    hashApiKey(key),
  ]);
  return row as { id: string; last_used_at: Date | null; revoked_at: Date | null };
}

/** Polls until `read` returns something truthy: key use is recorded after the response. */
async function eventually<T>(read: () => Promise<T>, timeoutMs = 3_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('API keys (C3)', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('answers 401 without a key, with the same text everywhere', async () => {
    for (const path of ['/v2/listeners', '/v2/auth/providers', '/v2/api-keys', '/api-host/v2/listeners']) {
      const res = await api.http.get(path, { key: null });
      expect(res.status, path).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
    // Probes need no key.
    expect((await api.http.get('/healthz', { key: null })).status).toBe(200);
  });

  it('answers the same 401 for a wrong, empty or malformed credential', async () => {
    const cases: Array<Record<string, string>> = [
      { 'x-api-key': `slw_${randomBytes(32).toString('base64url')}` },
      { 'x-api-key': api.adminKey.slice(0, -1) },
      { 'x-api-key': '   ' },
      { authorization: `Bearer slw_${randomBytes(32).toString('base64url')}` },
      { authorization: `Basic ${Buffer.from(`user:${api.adminKey}`).toString('base64')}` },
      { authorization: 'Bearer' },
      // Looks like a JWT, but no issuer is configured here.
      { authorization: 'Bearer aaa.bbb.ccc' },
    ];
    for (const headers of cases) {
      const res = await api.http.get('/v2/listeners', { key: null, headers });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
  });

  it('accepts the key as a Bearer token', async () => {
    for (const scheme of ['Bearer', 'bearer']) {
      const res = await api.http.get('/v2/listeners', {
        key: null,
        headers: { authorization: `${scheme} ${api.adminKey}` },
      });
      expect(res.status, scheme).toBe(200);
      expect(res.body).toEqual({ resources: expect.any(Array), offset: expect.any(Number) });
    }
  });

  it('refuses a revoked key', async () => {
    const key = await api.mintKey({ role: 'member' });
    expect((await api.http.get('/v2/listeners', { key })).status).toBe(200);
    const { id } = await keyRow(api, key);
    expect((await api.http.delete(`/v2/api-keys/${id}`)).status).toBe(204);
    expect((await keyRow(api, key)).revoked_at).toBeInstanceOf(Date);
    for (const headers of [{ 'x-api-key': key }, { authorization: `Bearer ${key}` }] as Array<Record<string, string>>) {
      const res = await api.http.get('/v2/listeners', { key: null, headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
  });

  it('records when a key was last used', async () => {
    const key = await api.mintKey({ role: 'member' });
    expect((await keyRow(api, key)).last_used_at).toBeNull();
    const before = Date.now();
    expect((await api.http.get('/v2/listeners', { key })).status).toBe(200);
    const first = await eventually(async () => (await keyRow(api, key)).last_used_at);
    expect(first).toBeInstanceOf(Date);
    // Allow for clock skew between this process and Postgres.
    expect(Math.abs(first!.getTime() - before)).toBeLessThan(60_000);
    // At most once a minute per key, so a burst of requests does not turn reads into writes.
    expect((await api.http.get('/v2/listeners', { key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    expect((await keyRow(api, key)).last_used_at).toEqual(first);
  });

  describe('organization-scoped keys', () => {
    let orgKey: string;
    beforeAll(async () => {
      orgKey = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });
    });

    it('need X-Tenant-Id on workspace routes', async () => {
      for (const [method, path] of [
        ['GET', '/v2/listeners'],
        ['POST', '/v2/listeners'],
        ['GET', `/v2/listeners/${randomUUID()}`],
      ] as const) {
        const res = await api.http.request(method, path, {
          key: orgKey,
          body: method === 'POST' ? listenerBody('x') : undefined,
        });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body).toEqual(ORG_SCOPED);
      }
      expect(await api.dataSource.query(`SELECT 1 FROM listeners WHERE compute_id = 'x'`)).toEqual([]);
    });

    it('act in the workspace X-Tenant-Id names, in either spelling', async () => {
      const { body: listener } = await api.http.post('/v2/listeners', listenerBody('org-visible'));
      for (const header of ['X-Tenant-Id', 'X-Tenant-ID', 'x-tenant-id']) {
        const res = await api.http.get('/v2/listeners', { key: orgKey, headers: { [header]: api.workspaceId } });
        expect(res.status, header).toBe(200);
        expect(res.body.resources.map((l: any) => l.id)).toContain(listener.id);
      }
      const created = await api.http.post('/v2/listeners', listenerBody('by-org-key'), {
        key: orgKey,
        headers: { 'X-Tenant-Id': api.workspaceId },
      });
      expect(created.status).toBe(201);
      expect(created.body.tenant_id).toBe(api.workspaceId);
      const [row] = await api.dataSource.query(`SELECT workspace_id FROM listeners WHERE id = $1`, [created.body.id]);
      expect(row).toEqual({ workspace_id: api.workspaceId });
    });

    it('answer 422 for a malformed X-Tenant-Id', async () => {
      for (const value of ['not-a-uuid', '1234']) {
        const res = await api.http.get('/v2/listeners', { key: orgKey, headers: { 'X-Tenant-Id': value } });
        expect(res.status, value).toBe(422);
        expect(res.body).toEqual({
          detail: [{ loc: ['header', 'x-tenant-id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }],
        });
      }
    });

    it('answer 404 for a workspace of another organization or none at all', async () => {
      const { workspace: foreign } = await new TenancyRepository(api.dataSource.manager).createOrganization('other');
      const { body: theirs } = await api.http.post('/v2/listeners', listenerBody('foreign'), {
        key: await api.mintKey({ organizationId: foreign.organizationId, workspaceId: foreign.id, role: 'admin' }),
      });
      expect(theirs.tenant_id).toBe(foreign.id);

      for (const id of [foreign.id, randomUUID()]) {
        const res = await api.http.get('/v2/listeners', { key: orgKey, headers: { 'X-Tenant-Id': id } });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ detail: `Workspace ID ${id} not found.` });
      }
      const direct = await api.http.get(`/v2/listeners/${theirs.id}`, {
        key: orgKey,
        headers: { 'X-Tenant-Id': foreign.id },
      });
      expect(direct.status).toBe(404);
      expect(direct.text).not.toContain('foreign');
    });

    it('work on organization routes without X-Tenant-Id', async () => {
      const created = await api.http.post('/v2/auth/providers', providerBody('org-key-provider'), { key: orgKey });
      expect(created.status).toBe(201);
      expect(created.body.organization_id).toBe(api.organizationId);
      const list = await api.http.get('/v2/auth/providers', { key: orgKey });
      expect(list.status).toBe(200);
      expect(list.body.map((p: any) => p.provider_id)).toContain('org-key-provider');
    });

    it('keep their role: an org-scoped member cannot write', async () => {
      const member = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'member' });
      expect((await api.http.get('/v2/auth/providers', { key: member })).status).toBe(200);
      const res = await api.http.post('/v2/auth/providers', providerBody('by-org-member'), { key: member });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(ORGANIZATION_ADMIN_ONLY);
      const keys = await api.http.get('/v2/api-keys', { key: member });
      expect(keys.status).toBe(403);
      expect(keys.body).toEqual(ADMIN_ONLY);
    });
  });

  it('refuses a listener agent key on every ordinary route', async () => {
    const { body: listener } = await api.http.post('/v2/listeners', listenerBody('agent-cluster'));
    const agentKey = await api.mintKey({ listenerId: listener.id });
    for (const [method, path] of [
      ['GET', '/v2/listeners'],
      ['GET', `/v2/listeners/${listener.id}`],
      ['PATCH', `/v2/listeners/${listener.id}`],
      ['DELETE', `/v2/listeners/${listener.id}`],
      ['GET', '/v2/auth/providers'],
      ['GET', '/v2/api-keys'],
      ['POST', '/v2/api-keys'],
    ] as const) {
      const res = await api.http.request(method, path, {
        key: agentKey,
        body: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual(LISTENER_KEY_REFUSED);
    }
    expect((await api.http.get(`/v2/listeners/${listener.id}`)).status).toBe(200);
  });

  it('never logs a credential', () => {
    expect(api.logs.lines().some((l: any) => l.res?.statusCode === 401)).toBe(true);
    expect(api.logs.text()).not.toContain(api.adminKey);
  });
});

describe('JWT bearer tokens (C3)', () => {
  const ISSUER = 'https://issuer.test';
  const AUDIENCE = 'https://slipway.test';
  const KID = 'test-key-1';
  const EC_KID = 'test-key-ec';
  const MAX_AGE_SECONDS = 3_600;
  let api: TestApi;
  let jwks: Server;
  let signingKey: CryptoKey;
  /** A key the issuer publishes, but for an algorithm this install does not accept. */
  let ecKey: CryptoKey;
  let jwksRequests = 0;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    signingKey = privateKey;
    const ec = await generateKeyPair('ES256');
    ecKey = ec.privateKey;
    const jwk = { ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
    const ecJwk = { ...(await exportJWK(ec.publicKey)), kid: EC_KID, alg: 'ES256', use: 'sig' };
    // The identity provider is outside the machine, so a fake one stands in: a JWKS endpoint.
    jwks = createServer((req, res) => {
      if (req.url !== '/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      jwksRequests += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk, ecJwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const { port } = jwks.address() as AddressInfo;
    api = await startTestApi({
      SLIPWAY_JWT_ISSUER: ISSUER,
      SLIPWAY_JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
      SLIPWAY_JWT_AUDIENCE: AUDIENCE,
      SLIPWAY_JWT_ALGORITHMS: 'RS256,PS256',
      SLIPWAY_JWT_MAX_AGE_SECONDS: String(MAX_AGE_SECONDS),
    });
  });
  afterAll(async () => {
    await api?.close();
    jwks?.closeAllConnections();
    await new Promise<void>((resolve) => (jwks ? jwks.close(() => resolve()) : resolve()));
  });

  interface TokenOptions {
    claims?: JWTPayload;
    issuer?: string;
    audience?: string | null;
    subject?: string | null;
    expiresIn?: string | number | null;
    issuedAt?: number | null;
    notBefore?: number;
    key?: CryptoKey | Uint8Array;
    kid?: string;
    alg?: string;
  }

  const tokensSent: string[] = [];
  const bearer = (token: string) => {
    tokensSent.push(token);
    return { key: null, headers: { authorization: `Bearer ${token}` } };
  };

  /** A token valid for this install; each option (null: leave the claim out) breaks one thing. */
  function sign(options: TokenOptions = {}): Promise<string> {
    const {
      claims = {},
      issuer = ISSUER,
      audience = AUDIENCE,
      subject = 'user-1',
      expiresIn = '5m',
      key = signingKey,
      kid = KID,
      alg = 'RS256',
    } = options;
    const jwt = new SignJWT({ org_id: api.organizationId, ...claims })
      .setProtectedHeader({ alg, kid })
      .setIssuer(issuer);
    if (subject) jwt.setSubject(subject);
    if (audience) jwt.setAudience(audience);
    if (options.issuedAt !== null) jwt.setIssuedAt(options.issuedAt);
    if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore);
    if (expiresIn !== null) jwt.setExpirationTime(expiresIn);
    return jwt.sign(key);
  }

  it('accepts a valid token with org_id and tenant_id', async () => {
    const { body: listener } = await api.http.post('/v2/listeners', listenerBody('jwt-visible'));
    const res = await api.http.get('/v2/listeners', bearer(await sign({ claims: { tenant_id: api.workspaceId } })));
    expect(res.status).toBe(200);
    expect(res.body.resources.map((l: any) => l.id)).toEqual([listener.id]);
    expect(jwksRequests).toBeGreaterThan(0);
  });

  it('treats a token without tenant_id as org-scoped', async () => {
    const token = await sign();
    const res = await api.http.get('/v2/listeners', bearer(token));
    expect(res.status).toBe(403);
    expect(res.body).toEqual(ORG_SCOPED);
    const named = await api.http.get('/v2/listeners', {
      ...bearer(token),
      headers: { ...bearer(token).headers, 'X-Tenant-Id': api.workspaceId },
    });
    expect(named.status).toBe(200);
    expect((await api.http.get('/v2/auth/providers', bearer(token))).status).toBe(200);
  });

  it('binds a token with tenant_id to that workspace: another X-Tenant-Id gets 403', async () => {
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(api.organizationId, 'jwt-second');
    const token = await sign({ claims: { tenant_id: api.workspaceId, role: 'admin' } });
    const headers = (tenant: string) => ({
      ...bearer(token),
      headers: { authorization: `Bearer ${token}`, 'X-Tenant-Id': tenant },
    });
    // Whether or not the workspace exists: the token itself says it may not go there.
    for (const tenant of [other.id, randomUUID()]) {
      for (const [method, path] of [
        ['GET', '/v2/listeners'],
        ['POST', '/v2/listeners'],
        ['GET', '/v2/deployments'],
      ] as const) {
        const res = await api.http.request(method, path, {
          ...headers(tenant),
          body: method === 'POST' ? listenerBody('jwt-elsewhere') : undefined,
        });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body).toEqual({
          detail: `This token is scoped to workspace ${api.workspaceId} and cannot act in another workspace.`,
        });
      }
    }
    expect(await api.dataSource.query(`SELECT 1 FROM listeners WHERE compute_id = 'jwt-elsewhere'`)).toEqual([]);
    const same = await api.http.get('/v2/listeners', headers(api.workspaceId));
    expect(same.status).toBe(200);
  });

  it("keeps a workspace-bound admin token to its workspace: no organization-wide keys, no other workspace's keys", async () => {
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'jwt-keys-other',
    );
    const theirKey = await api.mintKey({ workspaceId: other.id, role: 'admin', description: 'other workspace' });
    const [{ id: theirKeyId }] = await api.dataSource.query(`SELECT id FROM api_keys WHERE workspace_id = $1`, [
      other.id,
    ]);
    const token = await sign({ claims: { tenant_id: api.workspaceId, role: 'admin' } });

    const orgWide = await api.http.post(
      '/v2/api-keys',
      { description: 'escalate', scope: 'organization', role: 'admin' },
      bearer(token),
    );
    expect(orgWide.status).toBe(403);
    expect(orgWide.body).toEqual({
      detail: 'Only an organization-scoped admin key can create organization-scoped keys.',
    });
    expect(await api.dataSource.query(`SELECT 1 FROM api_keys WHERE description = 'escalate'`)).toEqual([]);

    const listed = await api.http.get('/v2/api-keys', bearer(token));
    expect(listed.status).toBe(200);
    expect(listed.body.length).toBeGreaterThan(0);
    expect(listed.body.every((k: any) => k.tenant_id === api.workspaceId)).toBe(true);
    const revoke = await api.http.delete(`/v2/api-keys/${theirKeyId}`, bearer(token));
    expect(revoke.status).toBe(404);
    expect((await api.http.get('/v2/listeners', { key: theirKey, headers: { 'X-Tenant-Id': other.id } })).status).toBe(
      200,
    );

    // Its own workspace it administers as before.
    const own = await api.http.post(
      '/v2/api-keys',
      { description: 'ws key by jwt', scope: 'workspace', role: 'member' },
      bearer(token),
    );
    expect(own.status).toBe(201);
    expect(own.body.tenant_id).toBe(api.workspaceId);

    // Organization-level writes and the queue dashboard need an organization admin.
    const provider = await api.http.post('/v2/auth/providers', providerBody('by-ws-jwt'), bearer(token));
    expect(provider.status).toBe(403);
    expect(provider.body).toEqual(ORGANIZATION_ADMIN_ONLY);
    const board = await api.http.get('/admin/queues/api/queues', bearer(token));
    expect(board.status).toBe(403);
    expect(board.body).toEqual(ORGANIZATION_ADMIN_ONLY);
  });

  it('lets an organization admin token (no tenant_id) do organization-wide things', async () => {
    const token = await sign({ claims: { role: 'admin' } });
    const key = await api.http.post(
      '/v2/api-keys',
      { description: 'org key by jwt', scope: 'organization', role: 'member' },
      bearer(token),
    );
    expect(key.status).toBe(201);
    expect(key.body).toMatchObject({ scope: 'organization', tenant_id: null });
    expect((await api.http.get('/admin/queues/api/queues', bearer(token))).status).toBe(200);
  });

  it('refuses a token without exp', async () => {
    const token = await sign({ claims: { tenant_id: api.workspaceId }, expiresIn: null });
    const res = await api.http.get('/v2/listeners', bearer(token));
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });

  it('still accepts an API key that happens to look like a JWT', async () => {
    const dotted = 'aaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.cccc';
    await api.dataSource.query(
      `INSERT INTO api_keys (id, organization_id, workspace_id, scope, role, prefix, key_hash)
       VALUES ($1, $2, $3, 'workspace', 'member', 'aaaa.bbb', encode(sha256($4::bytea), 'hex'))`,
      [randomUUID(), api.organizationId, api.workspaceId, dotted],
    );
    expect(
      (await api.http.get('/v2/listeners', { key: null, headers: { authorization: `Bearer ${dotted}` } })).status,
    ).toBe(200);
    expect((await api.http.get('/v2/listeners', { key: dotted })).status).toBe(200);
  });

  it('answers 404 for a tenant_id outside the organization', async () => {
    const { workspace: foreign } = await new TenancyRepository(api.dataSource.manager).createOrganization('jwt-other');
    const res = await api.http.get('/v2/listeners', bearer(await sign({ claims: { tenant_id: foreign.id } })));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Workspace ID ${foreign.id} not found.` });
  });

  it('refuses expired, foreign, mis-issued and incomplete tokens with the same 401', async () => {
    const { privateKey: otherKey } = await generateKeyPair('RS256');
    const now = Math.floor(Date.now() / 1000);
    const cases: Record<string, string> = {
      expired: await sign({ claims: { tenant_id: api.workspaceId }, expiresIn: now - 60 }),
      'signed by another key (same kid)': await sign({ claims: { tenant_id: api.workspaceId }, key: otherKey }),
      'signed by another key (unknown kid)': await sign({
        claims: { tenant_id: api.workspaceId },
        key: otherKey,
        kid: 'other',
      }),
      'wrong issuer': await sign({ claims: { tenant_id: api.workspaceId }, issuer: 'https://evil.test' }),
      'unknown organization': await sign({ claims: { org_id: randomUUID(), tenant_id: api.workspaceId } }),
      'org_id not a string': await sign({ claims: { org_id: 42 as unknown as string } }),
      'not yet valid': await sign({
        claims: { tenant_id: api.workspaceId },
        notBefore: now + 600,
        expiresIn: now + 1200,
      }),
      'without sub': await sign({ claims: { tenant_id: api.workspaceId }, subject: null }),
      'without aud': await sign({ claims: { tenant_id: api.workspaceId }, audience: null }),
      'for another audience': await sign({
        claims: { tenant_id: api.workspaceId },
        audience: 'https://other-service.test',
      }),
      'without iat': await sign({ claims: { tenant_id: api.workspaceId }, issuedAt: null }),
      'issued longer ago than the maximum age, though not expired': await sign({
        claims: { tenant_id: api.workspaceId },
        issuedAt: now - MAX_AGE_SECONDS - 120,
        expiresIn: now + 3_600,
      }),
      'issued in the future': await sign({
        claims: { tenant_id: api.workspaceId },
        issuedAt: now + 600,
        expiresIn: now + 1_200,
      }),
      'signed with an algorithm not allowed (ES256, key published)': await sign({
        claims: { tenant_id: api.workspaceId },
        key: ecKey,
        kid: EC_KID,
        alg: 'ES256',
      }),
      'HMAC with a guessable secret': await sign({
        claims: { tenant_id: api.workspaceId },
        alg: 'HS256',
        key: new TextEncoder().encode('secret'),
      }),
      'tenant_id not a UUID': await sign({ claims: { tenant_id: 'default' } }),
    };
    const valid = await sign({ claims: { tenant_id: api.workspaceId } });
    const [header, payload] = valid.split('.');
    cases['unsigned (alg none)'] = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    cases['tampered payload'] = `${header}.${Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), role: 'admin' }),
    ).toString('base64url')}.${valid.split('.')[2]}`;

    for (const [what, token] of Object.entries(cases)) {
      const res = await api.http.get('/v2/listeners', bearer(token));
      expect(res.status, what).toBe(401);
      expect(res.body, what).toEqual(UNAUTHORIZED);
    }
    expect((await api.http.get('/v2/listeners', bearer(valid))).status).toBe(200);
  });

  it('takes the role from the role claim', async () => {
    const member = await api.http.post('/v2/auth/providers', providerBody('by-jwt-member'), bearer(await sign()));
    expect(member.status).toBe(403);
    expect(member.body).toEqual(ORGANIZATION_ADMIN_ONLY);
    const memberKeys = await api.http.get(
      '/v2/api-keys',
      bearer(await sign({ claims: { tenant_id: api.workspaceId } })),
    );
    expect(memberKeys.status).toBe(403);
    expect(memberKeys.body).toEqual(ADMIN_ONLY);
    expect(await api.dataSource.query(`SELECT 1 FROM oauth_providers WHERE provider_id = 'by-jwt-member'`)).toEqual([]);

    const admin = await api.http.post(
      '/v2/auth/providers',
      providerBody('by-jwt-admin'),
      bearer(await sign({ claims: { role: 'admin' } })),
    );
    expect(admin.status).toBe(201);
    expect(admin.body).toMatchObject({ provider_id: 'by-jwt-admin', organization_id: api.organizationId });
    const [row] = await api.dataSource.query(
      `SELECT organization_id FROM oauth_providers WHERE provider_id = 'by-jwt-admin'`,
    );
    expect(row).toEqual({ organization_id: api.organizationId });
  });

  it('still accepts API keys, in both headers', async () => {
    expect((await api.http.get('/v2/listeners')).status).toBe(200);
    expect(
      (await api.http.get('/v2/listeners', { key: null, headers: { authorization: `Bearer ${api.adminKey}` } })).status,
    ).toBe(200);
  });

  it('never logs a token', () => {
    expect(tokensSent.length).toBeGreaterThan(10);
    const logged = api.logs.text();
    for (const token of tokensSent) expect(logged).not.toContain(token.split('.')[2] || token);
    expect(logged).not.toContain(api.adminKey);
  });
});
