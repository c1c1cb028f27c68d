import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GiteaProvider, GitHubProvider, ProviderError } from '@slipway/source';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The `github` and `gitea` providers (docs/api.md, Integrations) end to end through the api: integration
 * create → GET .../repos, and repohost deployments against them (C4).
 *
 * GitHub and Gitea are remote hosts that this test machine cannot reach (no network), so the
 * exchange is tested against recorded responses: a local HTTP server on 127.0.0.1 (ephemeral
 * port) replays the REST answers in test/fixtures/repohost/{github,gitea}/ — bodies, status
 * codes and `Link` pagination headers as those APIs send them — and records every request, so
 * the tests can check what the providers send (paths, auth headers, the App JWT exchange).
 * This fake stands in only for the remote host; everything of ours runs for real. Being on
 * loopback over plain http, it is reachable only because 127.0.0.1 is allow-listed
 * (SLIPWAY_OUTBOUND_ALLOW_HOSTS); ssrf.test.ts shows the same URLs refused without that.
 */

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/repohost');

interface Exchange {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

/** Replays one scenario of `<host>/exchanges.json`; anything not recorded there answers 404. */
class ReplayHost {
  readonly requests: Recorded[] = [];
  private server!: Server;
  base = '';

  constructor(
    private readonly host: 'github' | 'gitea',
    private readonly scenario: string,
    private readonly vars: Record<string, string> = {},
    private readonly hang = false,
  ) {}

  async start(): Promise<this> {
    const all = JSON.parse(readFileSync(path.join(FIXTURES, this.host, 'exchanges.json'), 'utf8'));
    const exchanges: Exchange[] = this.scenario ? all[this.scenario] : [];
    this.server = createServer((req, res) => {
      this.requests.push({ method: req.method!, url: req.url!, headers: req.headers });
      if (this.hang) return; // never answers: a host that hangs
      const hit = exchanges.find((e) => e.method === req.method && e.path === req.url);
      if (!hit) {
        res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: 'Not Found' }));
        return;
      }
      const headers = Object.fromEntries(Object.entries(hit.headers).map(([k, v]) => [k, this.fill(v)]));
      res.writeHead(hit.status, headers).end(readFileSync(path.join(FIXTURES, this.host, hit.body)));
    });
    this.server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => this.server.once('listening', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private fill(value: string): string {
    return value.replace(/\{(\w+)\}/g, (_m, name: string) =>
      name === 'base' ? this.base : (this.vars[name] ?? `{${name}}`),
    );
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let api: TestApi;
/** The replay hosts' address, allow-listed for providers built directly. */
const LOOPBACK = { allowHosts: ['127.0.0.1'] };
const hosts: ReplayHost[] = [];
const replay = async (host: 'github' | 'gitea', scenario: string, vars: Record<string, string> = {}, hang = false) => {
  const h = await new ReplayHost(host, scenario, vars, hang).start();
  hosts.push(h);
  return h;
};

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
});
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.stop()));
});
afterAll(async () => {
  await api?.close();
});

const newToken = (prefix: string) => `${prefix}_${randomBytes(18).toString('hex')}`;
const fixture = (host: string, file: string) => JSON.parse(readFileSync(path.join(FIXTURES, host, file), 'utf8'));

async function integration(
  name: string,
  provider: 'github' | 'gitea',
  config: Record<string, unknown>,
): Promise<string> {
  const res = await api.http.post('/v1/integrations/repohost', { provider, name, config });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

describe('github with a token', () => {
  it('lists /user/repos page by page through the Link header, with the token as Bearer', async () => {
    const host = await replay('github', 'token');
    const token = newToken('ghp');
    const id = await integration('gh-pat', 'github', { api_url: host.base, token });

    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      {
        host_integration_id: id,
        id: 812345671,
        name: 'support-agent',
        owner: 'acme-robotics',
        url: 'https://github.com/acme-robotics/support-agent.git',
        default_branch: 'main',
      },
      {
        host_integration_id: id,
        id: 812345702,
        name: 'research-agent',
        owner: 'acme-robotics',
        url: 'https://github.com/acme-robotics/research-agent.git',
        default_branch: 'develop',
      },
      {
        host_integration_id: id,
        id: 698812004,
        name: 'dotfiles',
        owner: 'octo-dev',
        url: 'https://github.com/octo-dev/dotfiles.git',
        default_branch: 'master',
      },
    ]);
    expect(host.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /user/repos?per_page=100&page=1',
      'GET /user/repos?per_page=100&page=2',
    ]);
    for (const r of host.requests) {
      expect(r.headers.authorization).toBe(`Bearer ${token}`);
      expect(r.headers.accept).toBe('application/vnd.github+json');
      expect(r.headers['x-github-api-version']).toBe('2022-11-28');
      expect(r.headers['user-agent']).toBe('slipway');
    }
    expect(api.logs.text()).not.toContain(token);
  });

  it("lists a repository's branches (GET /repos/{owner}/{repo}/branches), the default branch first", async () => {
    const host = await replay('github', 'token');
    const token = newToken('ghp');
    const id = await integration('gh-branches', 'github', { api_url: host.base, token });
    const url = 'https://github.com/acme-robotics/research-agent.git';
    const res = await api.http.get(`/v1/integrations/repohost/${id}/branches?repo_url=${encodeURIComponent(url)}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { name: 'develop', commit_sha: '9f2c4e1a7b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e', is_default: true },
      { name: 'feature/tool-calls', commit_sha: '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d', is_default: false },
    ]);
    expect(host.requests.at(-1)!.url).toBe('/repos/acme-robotics/research-agent/branches?per_page=100');
    expect(host.requests.at(-1)!.headers.authorization).toBe(`Bearer ${token}`);
    // A repository GitHub did not list is never asked about.
    const before = host.requests.length;
    expect(
      (
        await api.http.get(
          `/v1/integrations/repohost/${id}/branches?repo_url=${encodeURIComponent('https://github.com/acme-robotics/secret.git')}`,
        )
      ).status,
    ).toBe(404);
    expect(host.requests.slice(before).every((r) => r.url.startsWith('/user/repos'))).toBe(true);
  });

  it('a rejected token → 502 saying the token was rejected and what GitHub said, never the token', async () => {
    const host = await replay('github', 'bad-token');
    const token = newToken('ghp');
    const id = await integration('gh-bad', 'github', { api_url: host.base, token });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      detail:
        'GitHub answered 401 Unauthorized to GET /user/repos?per_page=100&page=1: the token was rejected ("Bad credentials").',
    });
    expect(res.text).not.toContain(token);
  });

  it('an unreachable host → 502 naming where it tried', async () => {
    const host = await replay('github', 'token');
    const base = host.base;
    await host.stop();
    hosts.splice(hosts.indexOf(host), 1);
    const id = await integration('gh-down', 'github', { api_url: base, token: newToken('ghp') });
    const res = await api.http.get(`/v1/integrations/github/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toBe(`Could not reach GitHub at ${base} (ECONNREFUSED).`);
  });

  it('never follows a pagination link to another origin (the token would go with it)', async () => {
    const elsewhere = await replay('github', 'token');
    const host = await replay('github', 'foreign-link', { elsewhere: elsewhere.base });
    const id = await integration('gh-foreign', 'github', { api_url: host.base, token: newToken('ghp') });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toBe(`GitHub sent a pagination link to another origin (${elsewhere.base}); not followed.`);
    expect(host.requests).toHaveLength(1);
    expect(elsewhere.requests).toEqual([]);
  });

  it('a repohost deployment takes a listed clone_url and its default branch (C4)', async () => {
    const host = await replay('github', 'token');
    const id = await integration('gh-deploy', 'github', { api_url: host.base, token: newToken('ghp') });
    const ok = await api.http.post('/v2/deployments', {
      name: 'research-from-github',
      source: 'github',
      source_config: { integration_id: id, repo_url: 'https://github.com/acme-robotics/research-agent.git' },
      source_revision_config: {},
    });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.source_revision_config.repo_ref).toBe('develop');
    // html_url spelling of the same repository is the same repository.
    const html = await api.http.post('/v2/deployments', {
      name: 'support-from-github',
      source: 'repohost',
      source_config: { integration_id: id, repo_url: 'https://github.com/acme-robotics/support-agent' },
      source_revision_config: {},
    });
    expect(html.status, html.text).toBe(201);
    expect(html.body.source_revision_config.repo_ref).toBe('main');
    const missing = await api.http.post('/v2/deployments', {
      name: 'not-on-github',
      source: 'repohost',
      source_config: { integration_id: id, repo_url: 'https://github.com/acme-robotics/secret-agent.git' },
      source_revision_config: {},
    });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toContain('https://github.com/acme-robotics/secret-agent.git');
  });

  it('a host failure during create → 502 and nothing stored', async () => {
    const host = await replay('github', 'bad-token');
    const id = await integration('gh-create-fails', 'github', { api_url: host.base, token: newToken('ghp') });
    const res = await api.http.post('/v2/deployments', {
      name: 'host-said-no',
      source: 'repohost',
      source_config: { integration_id: id, repo_url: 'https://github.com/acme-robotics/support-agent.git' },
      source_revision_config: {},
    });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('the token was rejected');
    expect(await api.dataSource.query(`SELECT id FROM deployments WHERE name = 'host-said-no'`)).toEqual([]);
  });

  it('clones authenticate with HTTP Basic x-access-token (what GitHub git endpoints accept)', async () => {
    const token = newToken('ghp');
    const auth = await new GitHubProvider({ auth: { token } }).cloneAuth();
    expect(auth).toEqual({
      type: 'http-header',
      header: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
    });
  });

  it('a host that does not answer fails after the timeout with a clear error', async () => {
    const host = await replay('github', 'token', {}, true);
    const provider = new GitHubProvider({
      apiUrl: host.base,
      auth: { token: newToken('ghp') },
      timeoutMs: 300,
      outbound: LOOPBACK,
    });
    const started = Date.now();
    const failure = await provider.listRepositories().catch((err) => err);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure.message).toBe('GitHub did not answer GET /user/repos?per_page=100&page=1 within 0.3 s.');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('github as an App', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  // GitHub hands out PKCS#1 keys ("BEGIN RSA PRIVATE KEY").
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

  it('signs an RS256 JWT, exchanges it for an installation token, and lists /installation/repositories with it', async () => {
    const host = await replay('github', 'app');
    const id = await integration('gh-app', 'github', {
      api_url: host.base,
      app_id: 1234567,
      installation_id: 57219034,
      private_key: pem,
    });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((r: any) => [r.id, r.name, r.owner, r.url, r.default_branch])).toEqual([
      [812345671, 'support-agent', 'acme-robotics', 'https://github.com/acme-robotics/support-agent.git', 'main'],
      [812399815, 'billing-agent', 'acme-robotics', 'https://github.com/acme-robotics/billing-agent.git', 'release'],
    ]);

    expect(host.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /app/installations/57219034/access_tokens',
      'GET /installation/repositories?per_page=100',
    ]);
    const jwt = String(host.requests[0]!.headers.authorization).replace(/^Bearer /, '');
    expect(decodeProtectedHeader(jwt)).toMatchObject({ alg: 'RS256' });
    const { payload } = await jwtVerify(jwt, publicKey, { issuer: '1234567', algorithms: ['RS256'] });
    const now = Math.floor(Date.now() / 1000);
    expect(payload.iat).toBeLessThanOrEqual(now);
    // GitHub refuses App JWTs that live more than 10 minutes.
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(600);
    expect(payload.exp!).toBeGreaterThan(now);
    expect(host.requests[1]!.headers.authorization).toBe(
      `Bearer ${fixture('github', 'installation-access-token.json').token}`,
    );
  });

  it('clones with the installation token; the token is exchanged once while it is fresh', async () => {
    const host = await replay('github', 'app');
    const provider = new GitHubProvider({
      apiUrl: host.base,
      auth: { appId: 1234567, installationId: 57219034, privateKey: pem },
      outbound: LOOPBACK,
    });
    await provider.listRepositories();
    const auth = await provider.cloneAuth();
    const installationToken = fixture('github', 'installation-access-token.json').token;
    expect(auth).toEqual({
      type: 'http-header',
      header: `Authorization: Basic ${Buffer.from(`x-access-token:${installationToken}`).toString('base64')}`,
    });
    expect(host.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it("GitHub refusing the App's JWT → 502 saying to check app_id and private_key", async () => {
    const host = await replay('github', 'bad-app-key');
    const id = await integration('gh-app-bad', 'github', {
      api_url: host.base,
      app_id: 1234567,
      installation_id: 57219034,
      private_key: pem,
    });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toBe(
      'GitHub answered 401 Unauthorized to POST /app/installations/57219034/access_tokens: ' +
        "the GitHub App's JWT was rejected (check app_id and private_key) " +
        '("A JSON web token could not be decoded").',
    );
    expect(res.text).not.toContain('PRIVATE KEY');
  });
});

describe('gitea', () => {
  it('lists /api/v1/user/repos page by page, with `Authorization: token`', async () => {
    const host = await replay('gitea', 'token');
    const token = newToken('gta');
    const id = await integration('gitea-main', 'gitea', { api_url: host.base, token });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      {
        host_integration_id: id,
        id: 41,
        name: 'triage-agent',
        owner: 'platform',
        url: 'https://gitea.acme.internal/platform/triage-agent.git',
        default_branch: 'main',
      },
      {
        host_integration_id: id,
        id: 44,
        name: 'eval-harness',
        owner: 'platform',
        url: 'https://gitea.acme.internal/platform/eval-harness.git',
        default_branch: 'trunk',
      },
      {
        host_integration_id: id,
        id: 58,
        name: 'scratch',
        owner: 'jdoe',
        url: 'https://gitea.acme.internal/jdoe/scratch.git',
        default_branch: 'main',
      },
    ]);
    expect(host.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /api/v1/user/repos?limit=50&page=1',
      'GET /api/v1/user/repos?limit=50&page=2',
    ]);
    for (const r of host.requests) expect(r.headers.authorization).toBe(`token ${token}`);
  });

  it("lists a repository's branches (GET /api/v1/repos/{owner}/{repo}/branches), the default branch first", async () => {
    const host = await replay('gitea', 'token');
    const token = newToken('gta');
    const id = await integration('gitea-branches', 'gitea', { api_url: host.base, token });
    const url = 'https://gitea.acme.internal/platform/eval-harness.git';
    const res = await api.http.get(`/v1/integrations/repohost/${id}/branches?repo_url=${encodeURIComponent(url)}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { name: 'trunk', commit_sha: 'deadbeefdeadbeefdeadbeefdeadbeefdeadbeef', is_default: true },
      { name: 'feature/eval-v2', commit_sha: 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00', is_default: false },
    ]);
    expect(host.requests.at(-1)!.url).toBe('/api/v1/repos/platform/eval-harness/branches?limit=50&page=1');
    expect(host.requests.at(-1)!.headers.authorization).toBe(`token ${token}`);
    // The host failing on the branches (not recorded for this repository: 404) → 502 with its words.
    const failed = await api.http.get(
      `/v1/integrations/repohost/${id}/branches?repo_url=${encodeURIComponent('https://gitea.acme.internal/jdoe/scratch.git')}`,
    );
    expect(failed.status).toBe(502);
    expect(failed.body.detail).toContain('Not Found');
  });

  it('an api_url given with /api/v1 is the same instance', async () => {
    const host = await replay('gitea', 'token');
    const repos = await new GiteaProvider({
      apiUrl: `${host.base}/api/v1/`,
      token: newToken('gta'),
      outbound: LOOPBACK,
    }).listRepositories();
    expect(repos).toHaveLength(3);
    expect(host.requests[0]!.url).toBe('/api/v1/user/repos?limit=50&page=1');
  });

  it('a rejected token → 502 with what Gitea said', async () => {
    const host = await replay('gitea', 'bad-token');
    const token = newToken('gta');
    const id = await integration('gitea-bad', 'gitea', { api_url: host.base, token });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      detail:
        'Gitea answered 401 Unauthorized to GET /api/v1/user/repos?limit=50&page=1: ' +
        'the token was rejected ("user does not exist [uid: 0, name: ]").',
    });
    expect(res.text).not.toContain(token);
  });

  it('a wrong api_url (404) → 502 with what the host said', async () => {
    const host = await replay('gitea', ''); // every path answers 404 {"message":"Not Found"}
    const id = await integration('gitea-wrong-url', 'gitea', { api_url: host.base, token: newToken('gta') });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toBe(
      'Gitea answered 404 Not Found to GET /api/v1/user/repos?limit=50&page=1 ("Not Found").',
    );
  });

  it('an answer that is not JSON (an SSO login page in front of the API) → 502 saying so', async () => {
    const host = await replay('gitea', 'sso-proxy');
    const id = await integration('gitea-behind-sso', 'gitea', { api_url: host.base, token: newToken('gta') });
    const res = await api.http.get(`/v1/integrations/repohost/${id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toBe(
      'Gitea answered GET /api/v1/user/repos?limit=50&page=1 with 200 and a body that is not JSON.',
    );
  });

  it('clones authenticate with the token as the HTTP Basic password', async () => {
    const token = newToken('gta');
    expect(await new GiteaProvider({ apiUrl: 'https://gitea.acme.internal', token }).cloneAuth()).toEqual({
      type: 'http-header',
      header: `Authorization: Basic ${Buffer.from(`oauth2:${token}`).toString('base64')}`,
    });
  });
});
