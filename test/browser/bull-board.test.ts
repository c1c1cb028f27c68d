import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type LaunchOptions, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTENER_KEY_REFUSED, ORGANIZATION_ADMIN_ONLY } from '../../services/api/src/auth/authenticator.js';
import { BASIC_CHALLENGE, CROSS_SITE_REFUSED } from '../../services/api/src/admin/bull-board.js';
import { browserRequired, CHROMIUM, CHROMIUM_ARGS, hasChromium } from '../support/browser.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

const required = browserRequired;
const QUEUE_NAMES = ['builds', 'maintenance', 'rollouts', 'webhooks'];
const UNAUTHORIZED = { detail: 'Invalid or missing API key.' };

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let api: TestApi;
/** The board is for organization admins: an organization-scoped admin key. */
let adminKey: string;
let memberKey: string;
let listenerKey: string;

beforeAll(async () => {
  api = await startTestApi();
  adminKey = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' });
  memberKey = await api.mintKey({ role: 'member' });
  const listener = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: `bull-board-${randomUUID()}`,
    compute_config: { k8s_namespaces: ['default'] },
  });
  expect(listener.status).toBe(201);
  // Even with the admin role, a listener agent's key may call nothing but the agent endpoints.
  listenerKey = await api.mintKey({ role: 'admin', listenerId: listener.body.id });
  // Something for the board to show: a delayed build nothing consumes (no worker on this prefix).
  await api.queues.builds.add(
    'build.revision',
    { revisionId: randomUUID(), attempt: 0 },
    { delay: 3_600_000, jobId: `build-board-${randomUUID()}` },
  );
});
afterAll(async () => {
  await api?.close();
});

describe('/admin/queues over HTTP', () => {
  it('answers 401 with a Basic challenge and the contract body without credentials', async () => {
    for (const path of [
      '/admin/queues',
      '/api-host/admin/queues',
      '/admin/queues/api/queues',
      '/admin/queues/static/images/logo.svg',
    ]) {
      const res = await api.http.get(path, { key: null });
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate'), path).toBe(BASIC_CHALLENGE);
      expect(res.body, path).toEqual(UNAUTHORIZED);
    }
  });

  it('answers 401 with the challenge for a wrong key, however it is sent', async () => {
    const wrong: Array<Record<string, string>> = [
      { 'x-api-key': 'slw_nope' },
      { authorization: 'Bearer slw_nope' },
      { authorization: basic('admin', 'slw_nope') },
    ];
    for (const headers of wrong) {
      const res = await api.http.get('/admin/queues', { key: null, headers });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(BASIC_CHALLENGE);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
  });

  it('answers 403 to a member key, a workspace admin key and a listener agent key, with no challenge', async () => {
    const orgMember = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'member' });
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-api-key': memberKey }, ORGANIZATION_ADMIN_ONLY],
      [{ authorization: `Bearer ${memberKey}` }, ORGANIZATION_ADMIN_ONLY],
      [{ authorization: basic('member', memberKey) }, ORGANIZATION_ADMIN_ONLY],
      [{ 'x-api-key': orgMember }, ORGANIZATION_ADMIN_ONLY],
      // An admin of one workspace only: the board acts on every workspace's jobs.
      [{ 'x-api-key': api.adminKey }, ORGANIZATION_ADMIN_ONLY],
      [{ authorization: basic('admin', api.adminKey) }, ORGANIZATION_ADMIN_ONLY],
      [{ 'x-api-key': listenerKey }, LISTENER_KEY_REFUSED],
      [{ authorization: basic('agent', listenerKey) }, LISTENER_KEY_REFUSED],
    ];
    for (const [headers, detail] of cases) {
      const res = await api.http.get('/admin/queues/api/queues', { key: null, headers });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body).toEqual({ detail });
      expect(res.headers.get('www-authenticate')).toBeNull();
      expect(res.text).not.toContain('builds');
    }
    expect(ORGANIZATION_ADMIN_ONLY).toBe(
      'This operation requires an organization admin: an organization-scoped admin API key.',
    );
    const pause = await api.http.put('/admin/queues/api/queues/builds/pause', undefined, { key: api.adminKey });
    expect(pause.status).toBe(403);
    expect(await api.queues.builds.isPaused()).toBe(false);
  });

  it("may not be framed, and sends helmet's protections, like every other page", async () => {
    for (const path of ['/admin/queues', '/api-host/admin/queues', '/docs/', '/v2/listeners', '/healthz']) {
      const res = await api.http.get(path, {
        key: path.startsWith('/admin') || path.startsWith('/api-host') ? adminKey : api.adminKey,
      });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("default-src 'self'");
      expect(csp, path).not.toContain('upgrade-insecure-requests');
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('strict-transport-security'), path).toMatch(/max-age=\d+/);
      expect(res.headers.get('cross-origin-opener-policy'), path).toBe('same-origin');
    }
  });

  it('serves the board to an admin key sent as X-Api-Key, Bearer, or Basic password (or user name)', async () => {
    const ways: Array<Record<string, string>> = [
      { 'x-api-key': adminKey },
      { authorization: `Bearer ${adminKey}` },
      { authorization: basic('admin', adminKey) },
      { authorization: basic(adminKey, '') },
    ];
    for (const headers of ways) {
      const page = await api.http.get('/admin/queues', { key: null, headers });
      expect(page.status, JSON.stringify(headers)).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.text).toContain('<base href="/admin/queues/"');
      const queues = await api.http.get('/admin/queues/api/queues', { key: null, headers });
      expect(queues.status).toBe(200);
      expect(queues.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(QUEUE_NAMES);
    }
  });

  it('links a board reached under /api-host to /api-host', async () => {
    const page = await api.http.get('/api-host/admin/queues', {
      key: null,
      headers: { authorization: basic('admin', adminKey) },
    });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<base href="/api-host/admin/queues/"');
    expect(page.headers.get('x-powered-by')).toBeNull();
  });

  it('lets an admin act on a queue (read/write), but not a member', async () => {
    const builds = api.queues.builds;
    const refused = await api.http.put('/admin/queues/api/queues/builds/pause', undefined, { key: memberKey });
    expect(refused.status).toBe(403);
    expect(await builds.isPaused()).toBe(false);
    try {
      const paused = await api.http.put('/admin/queues/api/queues/builds/pause', undefined, { key: adminKey });
      expect(paused.status).toBe(200);
      expect(await builds.isPaused()).toBe(true);
    } finally {
      await builds.resume();
    }
  });

  it('refuses a cross-site write that relies on Basic credentials a browser sends by itself', async () => {
    const builds = api.queues.builds;
    const authorization = basic('admin', adminKey);
    const crossSite: Array<Record<string, string>> = [
      { authorization, origin: 'http://evil.example' },
      { authorization, 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of crossSite) {
      const res = await api.http.put('/admin/queues/api/queues/builds/pause', undefined, { key: null, headers });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body).toEqual({ detail: CROSS_SITE_REFUSED });
      expect(await builds.isPaused()).toBe(false);
    }
    // The board's own requests are same-origin.
    const origin = new URL(api.baseUrl).origin;
    try {
      const own = await api.http.put('/admin/queues/api/queues/builds/pause', undefined, {
        key: null,
        headers: { authorization, origin, 'sec-fetch-site': 'same-origin' },
      });
      expect(own.status).toBe(200);
      expect(await builds.isPaused()).toBe(true);
    } finally {
      await builds.resume();
    }
  });
});

describe.runIf(hasChromium || required)('Bull Board in Chromium', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  /** A fresh browser with its own profile directory for each case, so nothing carries over. */
  async function withBrowser(
    options: Parameters<typeof chromium.launchPersistentContext>[1],
    use: (page: Page, context: BrowserContext) => Promise<void>,
  ) {
    const profile = mkdtempSync(path.join(tmpdir(), 'slipway-chromium-'));
    const launch: LaunchOptions = { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS };
    const context = await chromium.launchPersistentContext(profile, { ...launch, ...options });
    try {
      await use(context.pages()[0] ?? (await context.newPage()), context);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }

  /** Queue names in the sidebar once the app has rendered them (Google Fonts never load here). */
  async function sidebarQueues(page: Page): Promise<string[]> {
    await page.waitForSelector('#bull-board-sidebar nav a[title="builds"]', { timeout: 15_000 });
    return (
      await page
        .locator('#bull-board-sidebar nav a[title]')
        .evaluateAll((links) => links.map((a) => a.getAttribute('title')!))
    ).sort();
  }

  it('renders every queue for an admin key sent as a header', async () => {
    await withBrowser({}, async (page) => {
      await page.setExtraHTTPHeaders({ 'X-Api-Key': adminKey });
      const res = await page.goto(`${api.baseUrl}/admin/queues`);
      expect(res?.status()).toBe(200);
      expect(await sidebarQueues(page)).toEqual(QUEUE_NAMES);
      // The overview card of `builds` shows the delayed job, read through the board's API.
      await page.getByText('1 Job', { exact: true }).waitFor({ timeout: 15_000 });
      await page.screenshot({ path: '/tmp/bull-board.png', fullPage: true });
    });
  });

  it('answers the Basic challenge with browser credentials, under /api-host too', async () => {
    await withBrowser({ httpCredentials: { username: 'admin', password: adminKey } }, async (page) => {
      const res = await page.goto(`${api.baseUrl}/api-host/admin/queues`);
      expect(res?.status()).toBe(200);
      expect(await sidebarQueues(page)).toEqual(QUEUE_NAMES);
      expect(await page.locator('#bull-board-sidebar nav a[title="rollouts"]').getAttribute('href')).toBe(
        '/api-host/admin/queues/queue/rollouts',
      );
      // Into a queue and back: the board's own navigation keeps the credentials.
      await page.locator('#bull-board-sidebar nav a[title="builds"]').click();
      await page.waitForURL(/\/api-host\/admin\/queues\/queue\/builds/);
      await page.getByText('build.revision', { exact: true }).waitFor({ timeout: 15_000 });
    });
  });

  it('shows no queue to a member key (403)', async () => {
    await withBrowser({}, async (page) => {
      await page.setExtraHTTPHeaders({ 'X-Api-Key': memberKey });
      const res = await page.goto(`${api.baseUrl}/admin/queues`);
      expect(res?.status()).toBe(403);
      expect(await res?.json()).toEqual({ detail: ORGANIZATION_ADMIN_ONLY });
      expect(await page.locator('#bull-board-sidebar').count()).toBe(0);
      const text = await page.locator('body').innerText();
      for (const name of QUEUE_NAMES) expect(text).not.toContain(name);
    });
  });

  it('challenges a browser without credentials to log in (401 + Basic)', async () => {
    await withBrowser({}, async (page) => {
      const url = `${api.baseUrl}/admin/queues`;
      const challenged = page.waitForResponse(url);
      // A headed browser shows its login prompt here; headless, with no credentials to offer,
      // Chromium gives up on the challenge and the navigation fails with this error.
      await expect(page.goto(url)).rejects.toThrow(/ERR_INVALID_AUTH_CREDENTIALS/);
      const res = await challenged;
      expect(res.status()).toBe(401);
      expect(await res.headerValue('www-authenticate')).toBe(BASIC_CHALLENGE);
      expect(await page.locator('#bull-board-sidebar').count()).toBe(0);
    });
  });

  it('answers 401 again when the browser offers a wrong key', async () => {
    await withBrowser({ httpCredentials: { username: 'admin', password: 'slw_wrong' } }, async (page) => {
      const res = await page.goto(`${api.baseUrl}/admin/queues`);
      expect(res?.status()).toBe(401);
      expect(await page.locator('#bull-board-sidebar').count()).toBe(0);
    });
  });

  it('refuses to show the board inside a frame of another page', async () => {
    await withBrowser({ httpCredentials: { username: 'admin', password: adminKey } }, async (page) => {
      const refusals: string[] = [];
      page.on('console', (message) => {
        if (/frame-ancestors/.test(message.text())) refusals.push(message.text());
      });
      // A page of another origin (about:blank here) that frames the board.
      await page.setContent(`<iframe id="board" src="${api.baseUrl}/admin/queues" width="800" height="600"></iframe>`);
      await expect.poll(() => refusals.length, { timeout: 15_000 }).toBeGreaterThan(0);
      expect(refusals[0]).toContain("frame-ancestors 'none'");
      // The frame holds Chromium's error page, never the board.
      expect(page.frames()).toHaveLength(2);
      for (const frame of page.frames()) expect(await frame.locator('#bull-board-sidebar').count()).toBe(0);
    });
  });

  it('renders the API reference (/docs) under the security headers', async () => {
    await withBrowser({}, async (page) => {
      const blocked: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) blocked.push(message.text());
      });
      const res = await page.goto(`${api.baseUrl}/docs/`);
      expect(res?.status()).toBe(200);
      await page
        .locator('.swagger-ui .information-container .title')
        .filter({ hasText: 'Slipway' })
        .waitFor({ timeout: 15_000 });
      await page.locator('.opblock-summary-path[data-path="/v2/deployments"]').first().waitFor({ timeout: 15_000 });
      expect(blocked).toEqual([]);
    });
  });
});
