import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { createLocalIntegration, git, initRepo, integrationRoot } from '../support/git-fixtures.js';
import { HttpClient, type HttpResponse } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Repository-host integrations (docs/api.md, Integrations) and the repohost rules of deployment create (C4):
 * CRUD, validation, the SLIPWAY_LOCAL_REPOS_ROOT confinement, sealed credentials that never
 * leave, `local` listings of real git repositories, and tenant isolation. GitHub and Gitea
 * listings are in repohost-providers.test.ts.
 */

let api: TestApi;
let member: HttpClient;
let other: HttpClient;
let otherWorkspaceId: string;
/** Outside SLIPWAY_LOCAL_REPOS_ROOT: what a `local` integration must never reach. */
let outside: string;

beforeAll(async () => {
  api = await startTestApi();
  member = api.http.as(await api.mintKey({ role: 'member' }));
  otherWorkspaceId = randomUUID();
  await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other')`, [
    otherWorkspaceId,
    api.organizationId,
  ]);
  other = api.http.as(await api.mintKey({ workspaceId: otherWorkspaceId, role: 'admin' }));
  outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'slipway-outside-')));
  await initRepo(path.join(outside, 'secret-repo'));
});
afterAll(async () => {
  await api?.close();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RSA_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs1', format: 'pem' })
  .toString();

/**
 * Every credential any test sends (and every webhook secret the api hands out), so the last
 * test can prove none reached another response or the log. Random, so a hit can only be ours.
 */
const credentialsSent: string[] = [RSA_KEY.split('\n')[1]!];
const webhookSecrets: string[] = [];
const responses: HttpResponse[] = [];
function token(prefix: string): string {
  const t = `${prefix}_${randomBytes(18).toString('hex')}`;
  credentialsSent.push(t);
  return t;
}

async function create(body: unknown, client: HttpClient = api.http) {
  const res = await client.post('/v1/integrations/repohost', body);
  responses.push(res);
  if (res.status === 201) webhookSecrets.push(res.body.webhook_secret);
  return res;
}

async function get(pathname: string, client: HttpClient = api.http) {
  const res = await client.get(pathname);
  responses.push(res);
  return res;
}

async function rowOf(id: string) {
  const [row] = await api.dataSource.query('SELECT * FROM integrations WHERE id = $1', [id]);
  return row as Record<string, any> | undefined;
}

const box = () => secretsCodec(api.config);

describe('POST /v1/integrations/repohost', () => {
  it('creates a local integration: 201, webhook secret shown once and sealed in the row', async () => {
    const root = integrationRoot(api, 'create-local');
    const res = await create({ provider: 'local', name: 'create-local', config: { root } });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id;
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      tenant_id: api.workspaceId,
      provider: 'local',
      name: 'create-local',
      config: { root: realpathSync(root) },
      webhook_url: `${api.config.publicUrl}/v1/integrations/repohost/${id}/webhook`,
      webhook_secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const row = (await rowOf(id))!;
    expect(row).toMatchObject({
      workspace_id: api.workspaceId,
      provider: 'local',
      name: 'create-local',
      config: { root: realpathSync(root) },
    });
    expect(row.credentials_sealed).toBeNull();
    expect(row.webhook_secret_sealed).not.toContain(res.body.webhook_secret);
    expect(box().open(row.webhook_secret_sealed, id)).toBe(res.body.webhook_secret);

    // Shown only at creation, like an API key.
    const again = await get(`/v1/integrations/repohost/${id}`);
    expect(again.status).toBe(200);
    const { webhook_secret: _secret, ...rest } = res.body;
    expect(again.body).toEqual(rest);
  });

  it('github with a token: api_url defaults to api.github.com; the token is sealed, bound to the row, never returned', async () => {
    const secret = token('ghp');
    const res = await create({ provider: 'github', name: 'gh-token', config: { token: secret } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.config).toEqual({ api_url: 'https://api.github.com' });
    const row = (await rowOf(res.body.id))!;
    expect(row.config).toEqual({ api_url: 'https://api.github.com' });
    expect(row.credentials_sealed).not.toContain(secret);
    expect(JSON.parse(box().open(row.credentials_sealed, res.body.id))).toEqual({ token: secret });
    // Bound to its row: the same ciphertext does not open as another row's.
    expect(() => box().open(row.credentials_sealed, randomUUID())).toThrow();
  });

  it('github as an App: app_id and installation_id are config, the private key is sealed', async () => {
    const res = await create({
      provider: 'github',
      name: 'gh-app',
      config: {
        api_url: 'https://ghe.acme.example/api/v3',
        app_id: 1234567,
        installation_id: '57219034',
        private_key: RSA_KEY,
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.config).toEqual({
      api_url: 'https://ghe.acme.example/api/v3',
      app_id: 1234567,
      installation_id: 57219034,
    });
    const row = (await rowOf(res.body.id))!;
    expect(JSON.stringify(row.config)).not.toContain('PRIVATE KEY');
    expect(JSON.parse(box().open(row.credentials_sealed, res.body.id))).toEqual({ private_key: RSA_KEY });
  });

  it('gitea with a token', async () => {
    const secret = token('gitea');
    const res = await create({
      provider: 'gitea',
      name: 'gitea-main',
      config: { api_url: 'https://gitea.acme.example', token: secret },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.config).toEqual({ api_url: 'https://gitea.acme.example' });
    expect(JSON.parse(box().open((await rowOf(res.body.id))!.credentials_sealed, res.body.id))).toEqual({
      token: secret,
    });
  });

  it.each([
    [
      'nothing',
      {},
      [
        [['body', 'provider'], 'missing'],
        [['body', 'name'], 'missing'],
      ],
    ],
    ['an unknown provider', { provider: 'bitbucket', name: 'bb', config: {} }, [[['body', 'provider'], 'enum']]],
    [
      'a name with spaces',
      { provider: 'local', name: 'my repos', config: { root: '/srv' } },
      [[['body', 'name'], 'string_pattern_mismatch']],
    ],
    ['local without root', { provider: 'local', name: 'l1', config: {} }, [[['body', 'config', 'root'], 'missing']]],
    [
      'local with a relative root',
      { provider: 'local', name: 'l2', config: { root: 'repos/here' } },
      [[['body', 'config', 'root'], 'value_error']],
    ],
    ['local without config', { provider: 'local', name: 'l3' }, [[['body', 'config'], 'missing']]],
    [
      'github with neither token nor App',
      { provider: 'github', name: 'g1', config: {} },
      [[['body', 'config'], 'value_error']],
    ],
    [
      'github with a token and an App',
      { provider: 'github', name: 'g2', config: { token: 'x', app_id: 1, installation_id: 2, private_key: 'k' } },
      [
        [['body', 'config', 'private_key'], 'value_error'],
        [['body', 'config'], 'value_error'],
      ],
    ],
    [
      'a GitHub App without installation_id',
      { provider: 'github', name: 'g3', config: { app_id: 1, private_key: 'RSA' } },
      [
        [['body', 'config', 'private_key'], 'value_error'],
        [['body', 'config'], 'value_error'],
      ],
    ],
    [
      'a plain-http api_url off loopback',
      { provider: 'gitea', name: 't1', config: { api_url: 'http://gitea.acme.example', token: 'x' } },
      [[['body', 'config', 'api_url'], 'value_error']],
    ],
    [
      'gitea without api_url and token',
      { provider: 'gitea', name: 't2', config: {} },
      [
        [['body', 'config', 'api_url'], 'missing'],
        [['body', 'config', 'token'], 'missing'],
      ],
    ],
  ])('%s → 422 listing every problem, nothing stored', async (_case, body, expected) => {
    const before = (await api.dataSource.query('SELECT count(*)::int AS n FROM integrations'))[0].n;
    const res = await create(body);
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc, d.type])).toEqual(expected);
    expect((await api.dataSource.query('SELECT count(*)::int AS n FROM integrations'))[0].n).toBe(before);
  });

  it('a private key that is not PEM is refused without being quoted', async () => {
    const res = await create({
      provider: 'github',
      name: 'bad-key',
      config: { app_id: 9, installation_id: 9, private_key: 'not-a-key-7f3e9c' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', 'config', 'private_key'], msg: expect.stringContaining('PEM'), type: 'value_error' },
    ]);
    expect(res.text).not.toContain('not-a-key-7f3e9c');
  });

  describe('a local root must lie under SLIPWAY_LOCAL_REPOS_ROOT (400, nothing stored)', () => {
    const refused = async (root: string, detail: RegExp) => {
      const name = `refused-${randomBytes(4).toString('hex')}`;
      const res = await create({ provider: 'local', name, config: { root } });
      expect(res.status, res.text).toBe(400);
      expect(res.body.detail).toMatch(detail);
      expect(await api.dataSource.query('SELECT id FROM integrations WHERE name = $1', [name])).toEqual([]);
    };
    const allowed = () => api.config.localReposRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

    it('a directory elsewhere, naming the allowed root', async () => {
      await refused(outside, new RegExp(`outside .*${allowed()}`));
    });
    it('a path that climbs out with ..', async () => {
      await refused(path.join(api.config.localReposRoot, '..', '..'), new RegExp(`outside .*${allowed()}`));
    });
    it('a symlink inside the root that points outside it', async () => {
      const link = path.join(integrationRoot(api, 'links'), 'escape');
      symlinkSync(outside, link);
      await refused(link, new RegExp(`outside .*${allowed()}`));
    });
    it('a missing directory inside the root', async () => {
      await refused(path.join(api.config.localReposRoot, 'never-made'), /does not exist/);
    });
    it('a file, not a directory', async () => {
      const file = path.join(integrationRoot(api, 'files'), 'a-file');
      writeFileSync(file, 'x');
      await refused(file, /not a directory/);
    });
  });

  it('a name taken in the workspace → 409', async () => {
    const root = integrationRoot(api, 'dup');
    expect((await create({ provider: 'local', name: 'dup', config: { root } })).status).toBe(201);
    const res = await create({ provider: 'local', name: 'dup', config: { root } });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: `An integration named 'dup' already exists in workspace ID '${api.workspaceId}'.`,
    });
  });

  it('members can read but not create or delete (admin keys only)', async () => {
    const root = integrationRoot(api, 'member-view');
    const made = await create({ provider: 'local', name: 'member-view', config: { root } });
    const denied = await create({ provider: 'local', name: 'by-member', config: { root } }, member);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ detail: 'This operation requires an admin API key.' });
    expect((await member.delete(`/v1/integrations/repohost/${made.body.id}`)).status).toBe(403);
    expect((await get(`/v1/integrations/repohost/${made.body.id}`, member)).status).toBe(200);
    expect((await get(`/v1/integrations/repohost/${made.body.id}/repos`, member)).status).toBe(200);
  });

  it('needs a key', async () => {
    expect(
      (
        await api.http.post(
          '/v1/integrations/repohost',
          { provider: 'local', name: 'x', config: { root: '/' } },
          { key: null },
        )
      ).status,
    ).toBe(401);
    expect((await api.http.get('/v1/integrations/repohost', { key: null })).status).toBe(401);
  });
});

describe('GET and DELETE /v1/integrations/repohost', () => {
  it('lists newest first in the envelope, with limit and offset', async () => {
    const names = ['list-a', 'list-b', 'list-c'];
    for (const name of names) await createLocalIntegration(api, name, integrationRoot(api, name));
    const page = await get('/v1/integrations/repohost?limit=2');
    expect(page.status).toBe(200);
    expect(page.body.offset).toBe(2);
    expect(page.body.resources.map((r: any) => r.name)).toEqual(['list-c', 'list-b']);
    const next = await get('/v1/integrations/repohost?limit=2&offset=1');
    expect(next.body).toMatchObject({ offset: 3, resources: [{ name: 'list-b' }, { name: 'list-a' }] });
    for (const r of page.body.resources) expect(r).not.toHaveProperty('webhook_secret');
    expect((await get('/v1/integrations/repohost?limit=0')).status).toBe(422);
  });

  it('unknown id → 404 with the Integration text; a malformed id → 422', async () => {
    const missing = randomUUID();
    for (const suffix of ['', '/repos', '/deliveries']) {
      const res = await get(`/v1/integrations/repohost/${missing}${suffix}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Integration ID ${missing} not found.` });
    }
    expect((await api.http.delete(`/v1/integrations/repohost/${missing}`)).status).toBe(404);
    const bad = await get('/v1/integrations/repohost/not-a-uuid');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['path', 'integration_id'], type: 'uuid_parsing' });
  });

  it('deletes (204, then 404); refused with 400 while a deployment uses it', async () => {
    const root = integrationRoot(api, 'in-use');
    const repo = await initRepo(path.join(root, 'svc'));
    const integration = await createLocalIntegration(api, 'in-use', root);
    const deployment = await api.http.post('/v2/deployments', {
      name: 'uses-integration',
      source: 'repohost',
      source_config: { integration_id: integration.id, repo_url: repo.url },
      source_revision_config: {},
    });
    expect(deployment.status, deployment.text).toBe(201);

    const refused = await api.http.delete(`/v1/integrations/repohost/${integration.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      detail: `Integration ID ${integration.id} is still used by deployments; delete them first.`,
    });
    expect(await rowOf(integration.id)).toBeDefined();

    // Teardown finished: the deployment row is gone (what the deployer does at the end).
    await api.dataSource.query('DELETE FROM deployments WHERE id = $1', [deployment.body.id]);
    expect((await api.http.delete(`/v1/integrations/repohost/${integration.id}`)).status).toBe(204);
    expect(await rowOf(integration.id)).toBeUndefined();
    expect((await get(`/v1/integrations/repohost/${integration.id}`)).status).toBe(404);
  });
});

describe('GET .../repos of a local integration', () => {
  let integrationId: string;
  let root: string;

  beforeAll(async () => {
    root = integrationRoot(api, 'listing');
    await initRepo(path.join(root, 'web-app'));
    await initRepo(path.join(root, 'billing-service.git'), { bare: true, branch: 'trunk' });
    mkdirSync(path.join(root, 'not-a-repo'));
    writeFileSync(path.join(root, 'notes.txt'), 'not a directory');
    // Only direct children count: a repository two levels down is not listed.
    await initRepo(path.join(root, 'group', 'nested'));
    // A link to a repository outside the allowed root is not followed.
    symlinkSync(path.join(outside, 'secret-repo'), path.join(root, 'linked-outside'));
    integrationId = (await createLocalIntegration(api, 'listing', root)).id;
  });

  it('lists every repository directly under root, bare or not, with its HEAD branch', async () => {
    const res = await get(`/v1/integrations/repohost/${integrationId}/repos`);
    expect(res.status, res.text).toBe(200);
    const real = realpathSync(root);
    expect(res.body).toEqual([
      {
        host_integration_id: integrationId,
        id: expect.any(Number),
        name: 'billing-service.git',
        owner: 'listing',
        url: `file://${real}/billing-service.git`,
        default_branch: 'trunk',
      },
      {
        host_integration_id: integrationId,
        id: expect.any(Number),
        name: 'web-app',
        owner: 'listing',
        url: `file://${real}/web-app`,
        default_branch: 'main',
      },
    ]);
    for (const entry of res.body) {
      expect(Number.isInteger(entry.id)).toBe(true);
      expect(entry.id).toBeGreaterThan(0);
      expect(entry.id).toBeLessThan(2 ** 31);
    }
    expect(res.body[0].id).not.toBe(res.body[1].id);
  });

  it('ids are stable across listings; the /github/ alias answers the same', async () => {
    const first = await get(`/v1/integrations/repohost/${integrationId}/repos`);
    const alias = await get(`/v1/integrations/github/${integrationId}/repos`);
    expect(alias.status).toBe(200);
    expect(alias.body).toEqual(first.body);
    expect((await get(`/api-host/v1/integrations/repohost/${integrationId}/repos`)).body).toEqual(first.body);
  });

  it('follows the HEAD branch when it changes', async () => {
    const root2 = integrationRoot(api, 'head-moves');
    const repo = await initRepo(path.join(root2, 'svc'));
    const id = (await createLocalIntegration(api, 'head-moves', root2)).id;
    expect((await get(`/v1/integrations/repohost/${id}/repos`)).body[0].default_branch).toBe('main');
    await git(['-C', repo.path, 'checkout', '-q', '-b', 'release-2']);
    expect((await get(`/v1/integrations/repohost/${id}/repos`)).body[0].default_branch).toBe('release-2');
  });

  it('a root that vanished → 502 saying so', async () => {
    const gone = integrationRoot(api, 'vanishing');
    const id = (await createLocalIntegration(api, 'vanishing', gone)).id;
    rmSync(gone, { recursive: true });
    const res = await get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      detail: expect.stringContaining(
        `Cannot read the repositories directory ${realpathSync(api.config.localReposRoot)}/vanishing (ENOENT)`,
      ),
    });
  });

  it('a root swapped for a symlink to outside after creation → 502, nothing listed', async () => {
    const swapped = integrationRoot(api, 'swapped');
    const id = (await createLocalIntegration(api, 'swapped', swapped)).id;
    rmSync(swapped, { recursive: true });
    symlinkSync(outside, swapped);
    const res = await get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/outside the allowed root/);
    expect(res.text).not.toContain('secret-repo');
  });
});

describe('GET .../branches of a local integration repository', () => {
  let integrationId: string;
  let repo: Awaited<ReturnType<typeof initRepo>>;
  let featureSha: string;
  const branches = (url: string, client?: HttpClient) =>
    get(`/v1/integrations/repohost/${integrationId}/branches?repo_url=${encodeURIComponent(url)}`, client);

  beforeAll(async () => {
    const root = integrationRoot(api, 'branching');
    repo = await initRepo(path.join(root, 'svc'));
    await git(['-C', repo.path, 'checkout', '-q', '-b', 'feature/x']);
    writeFileSync(path.join(repo.path, 'x.txt'), 'x');
    await git(['-C', repo.path, 'add', '--all']);
    await git([
      '-C',
      repo.path,
      'commit',
      '--quiet',
      '--no-gpg-sign',
      '-m',
      'feature x',
      '--date',
      '2030-01-01T00:00:00Z',
    ]);
    featureSha = await git(['-C', repo.path, 'rev-parse', 'HEAD']);
    await git(['-C', repo.path, 'checkout', '-q', 'main']);
    integrationId = (await createLocalIntegration(api, 'branching', root)).id;
  });

  it('lists every branch with its commit, the default branch first', async () => {
    const url = `file://${realpathSync(repo.path)}`;
    const res = await branches(url);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { name: 'main', commit_sha: repo.sha, is_default: true },
      { name: 'feature/x', commit_sha: featureSha, is_default: false },
    ]);
    expect((await branches(`${url}.git/`)).body).toEqual(res.body);
  });

  it('a repository the integration does not list → 404; no path outside the root is read', async () => {
    for (const url of [
      `file://${realpathSync(outside)}/secret-repo`,
      `file://${realpathSync(repo.path)}/../../..`,
      'https://example.com/a/b',
    ]) {
      const res = await branches(url);
      expect(res.status, url).toBe(404);
      expect(res.body.detail).toContain('is not one of the repositories of integration');
    }
  });

  it('needs repo_url (422); another workspace → 404 Integration', async () => {
    expect((await get(`/v1/integrations/repohost/${integrationId}/branches`)).status).toBe(422);
    const res = await branches(`file://${realpathSync(repo.path)}`, other);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Integration ID ${integrationId} not found.` });
  });
});

describe('repohost deployments name a repository of an integration of the workspace (C4)', () => {
  let integrationId: string;
  let repoUrl: string;

  beforeAll(async () => {
    const root = integrationRoot(api, 'c4');
    repoUrl = (await initRepo(path.join(root, 'agent.git'), { bare: true, branch: 'stable' })).url;
    integrationId = (await createLocalIntegration(api, 'c4', root)).id;
  });

  const deploy = (
    name: string,
    sourceConfig: Record<string, unknown>,
    revisionConfig: Record<string, unknown> = {},
    client = api.http,
  ) =>
    client.post('/v2/deployments', {
      name,
      source: 'repohost',
      source_config: sourceConfig,
      source_revision_config: revisionConfig,
    });

  it('repo_ref defaults to the repository default branch; integration_id is stored for the foreign key', async () => {
    const res = await deploy('c4-default-ref', { integration_id: integrationId, repo_url: repoUrl });
    expect(res.status, res.text).toBe(201);
    expect(res.body.source_revision_config).toMatchObject({ repo_ref: 'stable', graph_config_path: 'langgraph.json' });
    expect(res.body.source_config).toMatchObject({ integration_id: integrationId, repo_url: repoUrl });
    const [row] = await api.dataSource.query('SELECT integration_id FROM deployments WHERE id = $1', [res.body.id]);
    expect(row.integration_id).toBe(integrationId);
    const [revision] = await api.dataSource.query('SELECT source_revision_config FROM revisions WHERE id = $1', [
      res.body.latest_revision_id,
    ]);
    expect(revision.source_revision_config.repo_ref).toBe('stable');
  });

  it('an explicit repo_ref is kept', async () => {
    const res = await deploy(
      'c4-explicit-ref',
      { integration_id: integrationId, repo_url: repoUrl },
      { repo_ref: 'feature/x' },
    );
    expect(res.status, res.text).toBe(201);
    expect(res.body.source_revision_config.repo_ref).toBe('feature/x');
  });

  it('an unknown integration → 404 Integration, nothing stored', async () => {
    const missing = randomUUID();
    const res = await deploy('c4-unknown', { integration_id: missing, repo_url: repoUrl });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Integration ID ${missing} not found.` });
    expect(await api.dataSource.query(`SELECT id FROM deployments WHERE name = 'c4-unknown'`)).toEqual([]);
    expect(await api.dataSource.query(`SELECT id FROM tracing_projects WHERE name = 'c4-unknown'`)).toEqual([]);
  });

  it("another workspace's integration → 404, as if it did not exist", async () => {
    const res = await deploy('c4-foreign', { integration_id: integrationId, repo_url: repoUrl }, {}, other);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Integration ID ${integrationId} not found.` });
  });

  it('a repository the integration does not list → 400 naming the url', async () => {
    const url = `file://${outside}/secret-repo`;
    const res = await deploy('c4-unlisted', { integration_id: integrationId, repo_url: url });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(
      `Repository ${url} is not one of the repositories of integration ID ${integrationId}`,
    );
    expect(await api.dataSource.query(`SELECT id FROM deployments WHERE name = 'c4-unlisted'`)).toEqual([]);
  });

  it('the listed url matches with or without a trailing .git or slash', async () => {
    const res = await deploy('c4-spelling', {
      integration_id: integrationId,
      repo_url: `${repoUrl.replace(/\.git$/, '')}/`,
    });
    expect(res.status, res.text).toBe(201);
  });
});

describe('tenant isolation', () => {
  it("another workspace sees none of this workspace's integrations, and may reuse their names", async () => {
    const mine = await createLocalIntegration(api, 'isolated', integrationRoot(api, 'isolated'));
    for (const suffix of ['', '/repos', '/deliveries']) {
      const res = await get(`/v1/integrations/repohost/${mine.id}${suffix}`, other);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Integration ID ${mine.id} not found.` });
    }
    expect((await get(`/v1/integrations/github/${mine.id}/repos`, other)).status).toBe(404);
    expect((await other.delete(`/v1/integrations/repohost/${mine.id}`)).status).toBe(404);
    expect(await rowOf(mine.id)).toBeDefined();
    expect((await get('/v1/integrations/repohost', other)).body).toEqual({ resources: [], offset: 0 });
    const theirs = await create(
      { provider: 'local', name: 'isolated', config: { root: integrationRoot(api, 'isolated') } },
      other,
    );
    expect(theirs.status).toBe(201);
    expect(theirs.body.tenant_id).toBe(otherWorkspaceId);
  });
});

describe('credentials never leave', () => {
  it('no response and no log line carries a token, a private key or (after creation) a webhook secret', async () => {
    expect(responses.length).toBeGreaterThan(20);
    for (const res of responses) {
      for (const secret of credentialsSent) expect(res.text).not.toContain(secret);
      expect(res.text).not.toMatch(/"(token|private_key|credentials\w*)"\s*:/);
    }
    const creations = responses.filter((r) => r.status === 201);
    for (const res of responses) {
      if (creations.includes(res)) continue;
      for (const secret of webhookSecrets) expect(res.text).not.toContain(secret);
    }
    const logs = api.logs.text();
    expect(logs.length).toBeGreaterThan(1000);
    for (const secret of [...credentialsSent, ...webhookSecrets]) expect(logs).not.toContain(secret);
  });
});
