import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Server-side request forgery through a forge's `api_url` (issue 8 item 3), and forge fetches
 * kept out of database transactions.
 *
 * The forge is a stand-in: a local HTTP server on 127.0.0.1 (ephemeral port) answering Gitea's
 * `GET /api/v1/user/repos`, because no real Gitea can run here. It records every request, so
 * a refused URL is shown to have caused no request at all.
 */

class StandInForge {
  readonly requests: string[] = [];
  private readonly held: ServerResponse[] = [];
  /** While true, answers are held until `release()`: a forge that is slow to answer. */
  slow = false;
  private server!: Server;
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.requests.push(req.url!);
      if (this.slow) this.held.push(res);
      else this.answer(res);
    });
    this.server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => this.server.once('listening', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  release(): void {
    this.slow = false;
    for (const res of this.held.splice(0)) this.answer(res);
  }

  private answer(res: ServerResponse): void {
    const repo = {
      id: 7,
      name: 'agent',
      owner: { login: 'acme' },
      clone_url: 'https://gitea.acme.example/acme/agent.git',
      default_branch: 'main',
    };
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify([repo]));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let strict: TestApi;
let allowing: TestApi;
let forge: StandInForge;

beforeAll(async () => {
  forge = await new StandInForge().start();
  // `strict` has no allow-list (the default); `allowing` lets the stand-in on 127.0.0.1 be reached.
  [strict, allowing] = await Promise.all([startTestApi(), startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' })]);
});
afterAll(async () => {
  await Promise.all([strict?.close(), allowing?.close(), forge?.stop()]);
});

const integrationCount = async (api: TestApi) =>
  (await api.dataSource.query('SELECT count(*)::int AS n FROM integrations'))[0].n;

describe('api_url at create', () => {
  it.each([
    ['plain http to loopback', () => `${forge.base}`, 'must use https'],
    ['https to loopback', () => forge.base.replace('http:', 'https:'), 'loopback'],
    ['a private address', () => 'https://10.20.30.40', 'private'],
    ['the cloud metadata address', () => 'https://169.254.169.254/latest', 'link-local'],
    ['IPv6 loopback', () => 'https://[::1]:3000', 'loopback'],
    ['IPv4-mapped loopback', () => 'https://[::ffff:7f00:1]', 'IPv4-mapped'],
    ['a unique-local IPv6 address', () => 'https://[fd00::1]', 'unique-local'],
    ['a CGNAT address', () => 'https://100.64.0.1', 'carrier-grade NAT'],
    ['a name resolving to loopback', () => 'https://localhost', 'localhost resolves to'],
  ])('gitea api_url as %s → 422 naming the field, nothing stored, no request made', async (_case, url, why) => {
    const before = await integrationCount(strict);
    const seen = forge.requests.length;
    const res = await strict.http.post('/v1/integrations/repohost', {
      provider: 'gitea',
      name: 'internal',
      config: { api_url: url(), token: 'tok' },
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', 'config', 'api_url'], msg: expect.stringContaining(why), type: 'value_error' },
    ]);
    expect(await integrationCount(strict)).toBe(before);
    expect(forge.requests.length).toBe(seen);
  });

  it('github api_url too; an allow-listed host is accepted over http', async () => {
    const refused = await strict.http.post('/v1/integrations/repohost', {
      provider: 'github',
      name: 'gh',
      config: { api_url: 'https://192.168.1.10/api/v3', token: 'tok' },
    });
    expect(refused.status).toBe(422);
    const accepted = await allowing.http.post('/v1/integrations/repohost', {
      provider: 'gitea',
      name: 'allowed',
      config: { api_url: forge.base, token: 'tok' },
    });
    expect(accepted.status, accepted.text).toBe(201);
    expect((await strict.http.get('/readyz')).status).toBe(200);
  });
});

describe('api_url at fetch time', () => {
  it('a stored api_url that now leads to loopback is refused before any request (502 saying why)', async () => {
    const created = await strict.http.post('/v1/integrations/repohost', {
      provider: 'gitea',
      name: 'rebound',
      config: { api_url: 'https://gitea.acme.example', token: 'tok' },
    });
    expect(created.status, created.text).toBe(201);
    // As if its DNS now answered 127.0.0.1, or the row predates the check.
    await strict.dataSource.query(
      `UPDATE integrations SET config = jsonb_set(config, '{api_url}', to_jsonb($2::text)) WHERE id = $1`,
      [created.body.id, forge.base],
    );
    const seen = forge.requests.length;
    const res = await strict.http.get(`/v1/integrations/repohost/${created.body.id}/repos`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('was not contacted');
    expect(res.body.detail).toContain('must use https');
    expect(forge.requests.length).toBe(seen);
  });
});

describe('a slow forge', () => {
  it('ten creates waiting on it hold no database connection: /readyz and other requests keep answering', async () => {
    const integration = await allowing.http.post('/v1/integrations/repohost', {
      provider: 'gitea',
      name: 'slow',
      config: { api_url: forge.base, token: 'tok' },
    });
    expect(integration.status, integration.text).toBe(201);
    forge.slow = true;
    const seen = forge.requests.length;
    // Ten creates: twice the api's pool of five connections.
    const creates = Array.from({ length: 10 }, (_, i) =>
      allowing.http.post('/v2/deployments', {
        name: `slow-forge-${i}`,
        source: 'repohost',
        source_config: { integration_id: integration.body.id, repo_url: 'https://gitea.acme.example/acme/agent' },
        source_revision_config: {},
      }),
    );
    try {
      // Every create is now waiting on the forge.
      await expect.poll(() => forge.requests.length - seen, { timeout: 10_000 }).toBe(10);
      const [ready, list, listeners] = await Promise.all([
        allowing.http.get('/readyz'),
        allowing.http.get('/v2/deployments'),
        allowing.http.post('/v2/listeners', {
          compute_type: 'k8s',
          compute_id: 'while-forge-is-slow',
          compute_config: { k8s_namespaces: null },
        }),
      ]);
      expect(ready.status, ready.text).toBe(200);
      expect(list.status, list.text).toBe(200);
      expect(listeners.status, listeners.text).toBe(201);
    } finally {
      forge.release();
    }
    const results = await Promise.all(creates);
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(results.every((r) => r.body.source_revision_config.repo_ref === 'main')).toBe(true);
  });
});
