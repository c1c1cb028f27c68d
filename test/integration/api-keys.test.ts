import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyRepository } from '@slipway/db';
import { startTestApi, type TestApi } from '../support/test-api.js';
import { eventually } from '../support/service-process.js';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const UNAUTHORIZED = { detail: 'Invalid or missing API key.' };
const ADMIN_ONLY = { detail: 'This operation requires an admin API key.' };
const ORG_SCOPED = {
  detail: "This API key is org-scoped and requires workspace specification. Please provide 'X-Tenant-Id' header.",
};
const LISTENER_KEY_REFUSED = {
  detail: 'This API key belongs to a listener agent and can only call the listener agent endpoints.',
};
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VIEW_FIELDS = [
  'created_at',
  'description',
  'id',
  'last_used_at',
  'listener_id',
  'organization_id',
  'prefix',
  'role',
  'scope',
  'tenant_id',
].sort();

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Every key this file has seen in full, so list responses can be checked for all of them. */
const keysSeen: string[] = [];

async function createKey(
  body: Record<string, unknown>,
  options: { key?: string; headers?: Record<string, string> } = {},
) {
  const res = await api.http.post('/v2/api-keys', body, options);
  if (res.status === 201) keysSeen.push(res.body.key);
  return res;
}

async function rowById(id: string) {
  const [row] = await api.dataSource.query('SELECT * FROM api_keys WHERE id = $1', [id]);
  return row as Record<string, any> | undefined;
}

const countKeys = async () => (await api.dataSource.query('SELECT count(*)::int AS n FROM api_keys'))[0].n as number;

describe('POST /v2/api-keys', () => {
  it('creates a workspace member key by default, shown once and stored hashed', async () => {
    const res = await createKey({ description: 'ci pipeline' });
    expect(res.status).toBe(201);
    const { key } = res.body;
    expect(key).toMatch(/^slw_[A-Za-z0-9_-]{43}$/);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      key,
      prefix: key.slice(0, 12),
      description: 'ci pipeline',
      scope: 'workspace',
      role: 'member',
      organization_id: api.organizationId,
      tenant_id: api.workspaceId,
      listener_id: null,
      created_at: expect.stringMatching(ISO),
      last_used_at: null,
    });

    const row = (await rowById(res.body.id))!;
    expect(row).toMatchObject({
      organization_id: api.organizationId,
      workspace_id: api.workspaceId,
      listener_id: null,
      scope: 'workspace',
      role: 'member',
      description: 'ci pipeline',
      prefix: key.slice(0, 12),
      key_hash: sha256(key),
      revoked_at: null,
    });
    const [{ whole }] = await api.dataSource.query(
      'SELECT row_to_json(k)::text AS whole FROM api_keys k WHERE id = $1',
      [res.body.id],
    );
    expect(whole).not.toContain(key);
    expect(whole).not.toContain(key.slice(12));

    // The new key works, as what it is: a member.
    expect((await api.http.get('/v2/listeners', { key })).status).toBe(200);
    const manage = await api.http.get('/v2/api-keys', { key });
    expect(manage.status).toBe(403);
    expect(manage.body).toEqual(ADMIN_ONLY);
  });

  it('creates an admin key that can manage keys itself', async () => {
    const res = await createKey({ role: 'admin' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ role: 'admin', scope: 'workspace', description: '' });
    const list = await api.http.get('/v2/api-keys', { key: res.body.key });
    expect(list.status).toBe(200);
    expect(list.body.map((k: any) => k.id)).toContain(res.body.id);
  });

  it('mints distinct keys', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => createKey({})));
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(results.map((r) => r.body.key)).size).toBe(5);
  });

  it('reports every bad field with loc and type', async () => {
    const before = await countKeys();
    const res = await api.http.post('/v2/api-keys', {
      description: 'd'.repeat(501),
      scope: 'tenant',
      role: 'owner',
      listener_id: 'not-a-uuid',
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', 'description'], msg: 'String should have at most 500 characters', type: 'string_too_long' },
      { loc: ['body', 'scope'], msg: "Input should be 'workspace' or 'organization'", type: 'enum' },
      { loc: ['body', 'role'], msg: "Input should be 'admin' or 'member'", type: 'enum' },
      { loc: ['body', 'listener_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' },
    ]);
    const malformed = await api.http.request('POST', '/v2/api-keys', { rawBody: '{"role":' });
    expect(malformed.status).toBe(422);
    expect(malformed.body).toEqual({ detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] });
    expect(await countKeys()).toBe(before);
  });

  it('refuses organization-scoped keys to a workspace admin', async () => {
    const before = await countKeys();
    const res = await api.http.post('/v2/api-keys', { scope: 'organization', role: 'admin' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'Only an organization-scoped admin key can create organization-scoped keys.' });
    expect(await countKeys()).toBe(before);
  });

  it('answers 404 for a listener_id that is not a listener of the workspace', async () => {
    const before = await countKeys();
    const unknown = randomUUID();
    const res = await api.http.post('/v2/api-keys', { listener_id: unknown });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Listener ID ${unknown} not found.` });

    // A listener of another workspace is just as unknown here.
    const otherWorkspace = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'second',
    );
    const otherAdmin = await api.mintKey({ workspaceId: otherWorkspace.id, role: 'admin' });
    const { body: foreign } = await api.http.post(
      '/v2/listeners',
      { compute_type: 'k8s', compute_id: 'foreign', compute_config: { k8s_namespaces: null } },
      { key: otherAdmin },
    );
    const crossed = await api.http.post('/v2/api-keys', { listener_id: foreign.id });
    expect(crossed.status).toBe(404);
    expect(crossed.body).toEqual({ detail: `Listener ID ${foreign.id} not found.` });
    expect(await countKeys()).toBe(before + 1); // only otherAdmin
  });

  it("creates a listener agent's key: always a member, refused everywhere else", async () => {
    const { body: listener } = await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'agent-key-cluster',
      compute_config: { k8s_namespaces: ['agents'] },
    });
    const res = await createKey({ listener_id: listener.id, role: 'admin', description: 'agent' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      scope: 'workspace',
      role: 'member',
      listener_id: listener.id,
      tenant_id: api.workspaceId,
    });
    expect(await rowById(res.body.id)).toMatchObject({
      listener_id: listener.id,
      role: 'member',
      workspace_id: api.workspaceId,
    });

    for (const [method, path] of [
      ['GET', '/v2/listeners'],
      ['GET', `/v2/listeners/${listener.id}`],
      ['GET', '/v2/auth/providers'],
      ['GET', '/v2/api-keys'],
    ] as const) {
      const refused = await api.http.request(method, path, { key: res.body.key });
      expect(refused.status, path).toBe(403);
      expect(refused.body).toEqual(LISTENER_KEY_REFUSED);
    }
  });
});

describe('GET /v2/api-keys', () => {
  it('lists keys newest first without the keys or their hashes', async () => {
    const { body: created } = await createKey({ description: 'listed' });
    const res = await api.http.get('/v2/api-keys');
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body[0].id).toBe(created.id);
    const { key: _key, ...view } = created;
    expect(res.body[0]).toEqual(view);
    for (const item of res.body) expect(Object.keys(item).sort()).toEqual(VIEW_FIELDS);

    expect(keysSeen.length).toBeGreaterThan(5);
    for (const key of [...keysSeen, api.adminKey]) {
      expect(res.text).not.toContain(key);
      expect(res.text).not.toContain(sha256(key));
    }
    expect(res.text).not.toMatch(/"(key|key_hash|keyHash|hash)"\s*:/);

    // Exactly the active keys of this workspace (the bootstrap key among them).
    const rows = await api.dataSource.query(
      'SELECT id FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC',
      [api.workspaceId],
    );
    expect(res.body.map((k: any) => k.id)).toEqual(rows.map((r: any) => r.id));
  });
});

describe('DELETE /v2/api-keys/{id}', () => {
  it('revokes: 204, then the key is refused, then 404', async () => {
    const { body: created } = await createKey({ description: 'to revoke' });
    expect((await api.http.get('/v2/listeners', { key: created.key })).status).toBe(200);

    const res = await api.http.delete(`/v2/api-keys/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');

    const refused = await api.http.get('/v2/listeners', { key: created.key });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual(UNAUTHORIZED);
    const row = (await rowById(created.id))!;
    expect(row.revoked_at).toBeInstanceOf(Date);
    expect((await api.http.get('/v2/api-keys')).body.map((k: any) => k.id)).not.toContain(created.id);

    const again = await api.http.delete(`/v2/api-keys/${created.id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `API key ID ${created.id} not found.` });
    // Revoking twice keeps the first revocation time.
    expect((await rowById(created.id))!.revoked_at).toEqual(row.revoked_at);
  });

  it('answers 422 for a malformed id and 404 for an unknown one', async () => {
    const bad = await api.http.delete('/v2/api-keys/not-a-uuid');
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [{ loc: ['path', 'api_key_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }],
    });
    const id = randomUUID();
    const unknown = await api.http.delete(`/v2/api-keys/${id}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: `API key ID ${id} not found.` });
  });

  it('lets exactly one of concurrent revokes win', async () => {
    const { body: created } = await createKey({});
    const results = await Promise.all(Array.from({ length: 4 }, () => api.http.delete(`/v2/api-keys/${created.id}`)));
    expect(results.map((r) => r.status).sort()).toEqual([204, 404, 404, 404]);
  });
});

describe('who may manage keys', () => {
  it('refuses member keys on every key route', async () => {
    const member = await api.mintKey({ role: 'member' });
    const { body: target } = await createKey({});
    const before = await countKeys();
    for (const [method, path] of [
      ['POST', '/v2/api-keys'],
      ['GET', '/v2/api-keys'],
      ['DELETE', `/v2/api-keys/${target.id}`],
    ] as const) {
      const res = await api.http.request(method, path, {
        key: member,
        body: method === 'POST' ? { role: 'admin' } : undefined,
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual(ADMIN_ONLY);
    }
    expect(await countKeys()).toBe(before);
    expect((await rowById(target.id))!.revoked_at).toBeNull();
  });

  it('answers 401 without a key', async () => {
    for (const [method, path] of [
      ['POST', '/v2/api-keys'],
      ['GET', '/v2/api-keys'],
      ['DELETE', `/v2/api-keys/${randomUUID()}`],
    ] as const) {
      const res = await api.http.request(method, path, { key: null, body: method === 'POST' ? {} : undefined });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
  });

  it("confines a workspace admin to its workspace's keys", async () => {
    const workspace = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'confined',
    );
    const otherAdmin = await api.mintKey({ workspaceId: workspace.id, role: 'admin' });
    const { body: mine } = await createKey({ description: 'home workspace' });

    const list = await api.http.get('/v2/api-keys', { key: otherAdmin });
    expect(list.status).toBe(200);
    expect(list.body.map((k: any) => k.tenant_id)).toEqual([workspace.id]);
    const revoke = await api.http.delete(`/v2/api-keys/${mine.id}`, { key: otherAdmin });
    expect(revoke.status).toBe(404);
    expect(revoke.body).toEqual({ detail: `API key ID ${mine.id} not found.` });
    expect((await rowById(mine.id))!.revoked_at).toBeNull();
  });

  it('lets an organization-scoped admin mint organization and workspace keys', async () => {
    const orgAdmin = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });

    const orgKey = await createKey({ scope: 'organization', description: 'org member' }, { key: orgAdmin });
    expect(orgKey.status).toBe(201);
    expect(orgKey.body).toMatchObject({
      scope: 'organization',
      role: 'member',
      tenant_id: null,
      organization_id: api.organizationId,
    });
    expect(await rowById(orgKey.body.id)).toMatchObject({
      scope: 'organization',
      workspace_id: null,
      key_hash: sha256(orgKey.body.key),
    });
    // The new org-scoped key works on organization routes, and on workspace routes with X-Tenant-Id.
    expect((await api.http.get('/v2/auth/providers', { key: orgKey.body.key })).status).toBe(200);
    expect((await api.http.get('/v2/listeners', { key: orgKey.body.key })).body).toEqual(ORG_SCOPED);
    expect(
      (await api.http.get('/v2/listeners', { key: orgKey.body.key, headers: { 'X-Tenant-Id': api.workspaceId } }))
        .status,
    ).toBe(200);

    // A workspace key needs the workspace named.
    const unnamed = await api.http.post('/v2/api-keys', { scope: 'workspace' }, { key: orgAdmin });
    expect(unnamed.status).toBe(403);
    expect(unnamed.body).toEqual(ORG_SCOPED);
    const named = await createKey({ role: 'admin' }, { key: orgAdmin, headers: { 'X-Tenant-Id': api.workspaceId } });
    expect(named.status).toBe(201);
    expect(named.body).toMatchObject({ scope: 'workspace', role: 'admin', tenant_id: api.workspaceId });

    const agent = await api.http.post(
      '/v2/api-keys',
      { scope: 'organization', listener_id: randomUUID() },
      { key: orgAdmin },
    );
    expect(agent.status).toBe(400);
    expect(agent.body).toEqual({ detail: 'A listener agent key must be workspace-scoped.' });

    // It sees every active key of the organization; a workspace admin does not see org keys.
    const orgList = await api.http.get('/v2/api-keys', { key: orgAdmin });
    const [{ n }] = await api.dataSource.query(
      'SELECT count(*)::int AS n FROM api_keys WHERE organization_id = $1 AND revoked_at IS NULL',
      [api.organizationId],
    );
    expect(orgList.body).toHaveLength(n);
    expect(orgList.body.map((k: any) => k.id)).toEqual(expect.arrayContaining([orgKey.body.id, named.body.id]));
    const wsList = await api.http.get('/v2/api-keys');
    expect(wsList.body.map((k: any) => k.id)).not.toContain(orgKey.body.id);
    expect(wsList.body.every((k: any) => k.tenant_id === api.workspaceId)).toBe(true);
  });
});

describe('the keys CLI', () => {
  const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
  const run = promisify(execFile);

  /** Runs `pnpm slipway …` against this file's database; resolves with stdout, or the exit code. */
  async function slipway(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run('pnpm', ['--silent', 'slipway', ...args], {
        cwd: repoRoot,
        // tsx compiles the CLI on each start: slow on a loaded machine, so a generous bound.
        timeout: 90_000,
        env: {
          ...process.env,
          DATABASE_URL: api.database.url,
          SLIPWAY_SECRETS_KEY: randomBytes(32).toString('base64'),
          NODE_ENV: 'test',
        },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  const lastJsonLine = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);

  // Each CLI run costs a pnpm + tsx start-up (seconds on a busy machine), so independent runs
  // go in parallel: two stages instead of four.
  it('creates, lists and revokes keys that the api honours', { timeout: 200_000 }, async () => {
    const [admin, member, invalid] = await Promise.all([
      slipway('keys', 'create', '--role', 'admin', '--json'),
      slipway('keys', 'create', '--description', 'from the cli', '--json'),
      slipway('keys', 'revoke', 'not-a-key-id'),
    ]);

    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('keys revoke needs a key id (a UUID)');

    expect([admin.code, member.code]).toEqual([0, 0]);
    const adminOut = lastJsonLine(admin.stdout);
    const memberOut = lastJsonLine(member.stdout);
    expect(adminOut).toEqual({
      id: expect.stringMatching(UUID),
      key: expect.stringMatching(/^slw_/),
      scope: 'workspace',
      role: 'admin',
    });
    expect(memberOut).toEqual({
      id: expect.stringMatching(UUID),
      key: expect.stringMatching(/^slw_/),
      scope: 'workspace',
      role: 'member',
    });
    keysSeen.push(adminOut.key, memberOut.key);
    expect(await rowById(adminOut.id)).toMatchObject({
      workspace_id: api.workspaceId,
      role: 'admin',
      key_hash: sha256(adminOut.key),
      revoked_at: null,
    });
    expect(await rowById(memberOut.id)).toMatchObject({
      role: 'member',
      description: 'from the cli',
      key_hash: sha256(memberOut.key),
    });

    // Both keys work over HTTP, each as what it is.
    const asAdmin = await api.http.get('/v2/api-keys', { key: adminOut.key });
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body.map((k: any) => k.id)).toEqual(expect.arrayContaining([adminOut.id, memberOut.id]));
    expect((await api.http.get('/v2/listeners', { key: memberOut.key })).status).toBe(200);
    expect((await api.http.get('/v2/api-keys', { key: memberOut.key })).body).toEqual(ADMIN_ONLY);

    // Listing races the revoke of the member key, so it only asserts on the admin key.
    const [listed, revoked] = await Promise.all([
      slipway('keys', 'list', '--json'),
      slipway('keys', 'revoke', memberOut.id),
    ]);
    expect(listed.code).toBe(0);
    const rows = lastJsonLine(listed.stdout);
    expect(rows.map((r: any) => r.id)).toContain(adminOut.id);
    expect(listed.stdout).not.toMatch(/keyHash|key_hash/);
    for (const key of [adminOut.key, memberOut.key]) {
      expect(listed.stdout).not.toContain(key);
      expect(listed.stdout).not.toContain(sha256(key));
    }

    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`revoked ${memberOut.id}`);
    // The CLI revokes in its own process: the api's brief key cache lets it lapse within a second.
    const refused = await eventually(
      () => api.http.get('/v2/listeners', { key: memberOut.key }),
      (r) => r.status === 401,
      1_000,
      50,
    );
    expect(refused.body).toEqual(UNAUTHORIZED);
    expect((await rowById(memberOut.id))!.revoked_at).toBeInstanceOf(Date);
    expect((await api.http.get('/v2/listeners', { key: adminOut.key })).status).toBe(200);
  });
});

// Last on purpose: every key above has been created, used and revoked by now.
describe('key hygiene', () => {
  it('never logs a key', () => {
    const requests = api.logs.lines().map((l: any) => [l.req?.method, l.req?.url, l.res?.statusCode]);
    expect(requests).toContainEqual(['POST', '/v2/api-keys', 201]);
    const logged = api.logs.text();
    for (const key of [...keysSeen, api.adminKey]) expect(logged).not.toContain(key);
  });
});
