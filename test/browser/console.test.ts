import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import express from 'express';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyRepository } from '@slipway/db';
import { RevisionLogWriter } from '@slipway/pipeline';
import { CONSOLE_CSP, CONSOLE_NOT_BUILT, consoleApp } from '../../services/api/src/console/console-app.js';
import { browserRequired, CHROMIUM, CHROMIUM_ARGS, hasChromium } from '../support/browser.js';
import { agentApplies as applied, recordPageErrors } from '../support/console-page.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { createLocalIntegration, initRepo, integrationRoot } from '../support/git-fixtures.js';
import type { HttpClient } from '../support/http.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The web console in Debian's Chromium against the real api (serving the console, which the
 * test run's global setup builds) and a real deployer process. Deployments are
 * `external_container` ones: the test plays the listener agent over the agent protocol
 * (docs/api.md, Listener agent protocol), the one part that cannot exist here (it would run in a
 * customer's Kubernetes cluster), so it decides when a rollout is healthy. Screenshots go to
 * test/browser/output/ (copies of current ones are kept in docs/images).
 */
const SECRET = `console-secret-${randomUUID()}`;
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

let api: TestApi;
let deployer: ServiceProcess;
let listenerId: string;
let agent: HttpClient;
let browser: Browser;

beforeAll(async () => {
  api = await startTestApi();
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api));
  listenerId = await createListener(api, `console-${randomUUID()}`, ['agents']);
  agent = api.http.as(await api.mintKey({ listenerId }));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await deployer?.stop();
  await api?.close();
});

/** A deployment of `image` whose first revision the deployer hands to the (test-played) agent. */
async function createDeployment(name: string, image = 'registry.example/agent:1') {
  const d = await createImageDeployment(api, name, listenerId, {
    image,
    secrets: [{ name: 'OPENAI_API_KEY', value: SECRET }],
  });
  return { id: d.id, revisionId: d.latest_revision_id };
}

const agentApplies = (revisionId: string, status?: 'DEPLOYED' | 'DEPLOY_FAILED', message?: string) =>
  applied(agent, listenerId, revisionId, status, message);

const deploymentOf = async (id: string) => (await api.http.get(`/v2/deployments/${id}`)).body;
const revisionOf = async (id: string, revisionId: string) =>
  (await api.http.get(`/v2/deployments/${id}/revisions/${revisionId}`)).body;

interface Watched {
  page: Page;
  /** Console errors and uncaught page errors. */
  errors: string[];
  /** Bodies of every API response the page received (event streams excepted). */
  bodies: string[];
  close: () => Promise<void>;
}

/** A fresh browser context (own storage) with a page that records errors and API responses. */
async function openPage(options: { bypassCSP?: boolean } = {}): Promise<Watched> {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const errors = recordPageErrors(page);
  const bodies: string[] = [];
  const reading: Array<Promise<void>> = [];
  page.on('response', (res) => {
    if (!res.url().startsWith(api.baseUrl) || /event-stream/.test(res.headers()['content-type'] ?? '')) return;
    reading.push(
      res.text().then(
        (t) => void bodies.push(t),
        () => {},
      ),
    );
  });
  return {
    page,
    errors,
    bodies,
    close: async () => {
      await Promise.all(reading);
      await context.close();
    },
  };
}

async function signIn(page: Page, key: string = api.adminKey) {
  const res = await page.goto(`${api.baseUrl}/console/`);
  expect(res?.status()).toBe(200);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** No secret value anywhere: page text, markup and every API response it received. */
async function expectNoSecret(w: Watched) {
  expect(await w.page.content()).not.toContain(SECRET);
  expect(await w.page.locator('body').innerText()).not.toContain(SECRET);
  await w.page.waitForTimeout(100);
  expect(w.bodies.length).toBeGreaterThan(0);
  for (const body of w.bodies) expect(body).not.toContain(SECRET);
}

describe('/console over HTTP', () => {
  it('serves the built page and its assets under a strict Content-Security-Policy, at /api-host too', async () => {
    for (const prefix of ['', '/api-host']) {
      const res = await api.http.get(`${prefix}/console/`, { key: null });
      expect(res.status, prefix).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      // Only files of its own: no inline script or style, nothing from another origin.
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(res.text).not.toMatch(/<style|https?:\/\//);
      const script = /<script[^>]*src="\.\/(assets\/[^"]+\.js)"/.exec(res.text)?.[1];
      expect(script).toBeTruthy();
      const asset = await api.http.get(`${prefix}/console/${script}`, { key: null });
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toMatch(/javascript/);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect(asset.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
    // Calls go to the api only: a deployed agent is reached through it (/v2/deployments/{id}/agent), never at an app's origin.
    expect(CONSOLE_CSP).toContain("connect-src 'self'; ");
    for (const prefix of ['', '/api-host']) {
      const bare = await fetch(`${api.baseUrl}${prefix}/console`, { redirect: 'manual' });
      expect(bare.status).toBe(301);
      expect(bare.headers.get('location')).toBe(`${prefix}/console/`);
    }
    const missing = await api.http.get('/console/assets/nope.js', { key: null });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Not Found' });
  });
});

describe('/console without a build', () => {
  it('answers 503 saying how to build it, under the same policy', async () => {
    const app = express().use(
      '/console',
      consoleApp((_req, _res, next) => next(), null),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/console/`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ detail: CONSOLE_NOT_BUILT });
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    } finally {
      server.close();
    }
  });
});

describe.runIf(hasChromium || browserRequired)('the console in Chromium', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  }, 60_000);

  it('shows the API’s words for a wrong key, and keeps no key anywhere but sessionStorage', async () => {
    const w = await openPage();
    try {
      await signIn(w.page, 'slw_wrong_key');
      await expect.poll(() => w.page.getByRole('alert').innerText()).toBe('Invalid or missing API key.');
      await w.page.getByLabel('API key').fill(api.adminKey);
      await w.page.getByRole('button', { name: 'Sign in' }).click();
      await w.page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
      expect(w.page.url()).not.toContain(api.adminKey);
      expect(
        await w.page.evaluate(
          "({ session: sessionStorage.getItem('slipway.console.apiKey'), local: localStorage.length })",
        ),
      ).toEqual({
        session: api.adminKey,
        local: 0,
      });
      // The only console error is the browser's note about the refused (401) request.
      expect(w.errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('asks an organization-scoped key to pick one of its workspaces, with the API’s message', async () => {
    const orgKey = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'member' });
    const staging = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'console-staging',
    );
    const w = await openPage();
    try {
      await signIn(w.page, orgKey);
      await expect.poll(() => w.page.getByRole('alert').innerText()).toContain("Please provide 'X-Tenant-Id' header.");
      const workspace = w.page.getByLabel('Workspace');
      await workspace.waitFor();
      const options = await workspace.locator('option').allInnerTexts();
      expect(options).toEqual(
        expect.arrayContaining([`default (${api.workspaceId})`, `console-staging (${staging.id})`]),
      );
      // The workspace picked (not the organization's first) is the one the sidebar names.
      await workspace.selectOption(staging.id);
      await w.page.getByRole('button', { name: 'Sign in' }).click();
      await w.page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
      await w.page.getByRole('banner').getByText('console-staging', { exact: true }).waitFor();
      expect(await w.page.getByRole('banner').getByText('default', { exact: true }).count()).toBe(0);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('falls back to polling when the event stream cannot be reached, and still shows the status change', async () => {
    const w = await openPage();
    try {
      await w.page.route('**/v2/events/stream**', (route) => route.abort());
      await signIn(w.page);
      await w.page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
      await w.page.locator('p.live[data-mode="polling"]').waitFor({ timeout: 15_000 });
      const { id, revisionId } = await createDeployment('polled-table');
      const row = w.page.locator(`tr[data-deployment-id="${id}"]`);
      await row.waitFor({ timeout: 15_000 });
      await agentApplies(revisionId);
      await expect
        .poll(() => row.locator('.active-status .badge').getAttribute('data-status'), { timeout: 15_000 })
        .toBe('DEPLOYED');
      // Nothing came over a stream: the refreshes did it.
      expect(await w.page.locator('p.live').getAttribute('data-last-event-id')).toBeNull();
    } finally {
      await w.close();
    }
  }, 60_000);

  it('lists a deployment created through the API and shows it reach DEPLOYED live, without a reload', async () => {
    const key = await api.http.post('/v2/tags/keys', { key: `team-${randomUUID().slice(0, 8)}` });
    const [mine, other] = await Promise.all(
      ['agents', 'billing'].map(
        async (value) => (await api.http.post(`/v2/tags/keys/${key.body.id}/values`, { value })).body.id as string,
      ),
    );
    const w = await openPage();
    try {
      await signIn(w.page);
      await w.page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
      // Set in this document: it survives only if the page never reloads.
      await w.page.evaluate('window.unreloaded = true');
      // Live from the event stream, not polling: the page is on the stream, and stays on it.
      const indicator = w.page.locator('p.live');
      await w.page.locator('p.live[data-mode="live"]').waitFor({ timeout: 15_000 });
      await w.page.evaluate(`
        window.modes = [];
        new MutationObserver(() => window.modes.push(document.querySelector('p.live')?.dataset.mode ?? 'gone'))
          .observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-mode'] });
      `);
      const { id, revisionId } = await createDeployment('live-table');
      const row = w.page.locator(`tr[data-deployment-id="${id}"]`);
      await row.waitFor({ timeout: 15_000 });
      expect(await row.getByRole('link', { name: 'live-table' }).getAttribute('href')).toBe(`#/deployments/${id}`);
      await expect
        .poll(() => row.locator('.latest-status .badge').getAttribute('data-status'), { timeout: 15_000 })
        .toMatch(/AWAITING_DEPLOY|DEPLOYING|DEPLOYED/);
      // Nothing serves yet: the deployment's status is not the API's bare READY but what is going on.
      const status = row.locator('td[data-label="Status"]');
      expect(await status.innerText()).toBe('Building…');
      await agentApplies(revisionId);
      await expect
        .poll(() => row.locator('.active-status .badge').getAttribute('data-status'), { timeout: 15_000 })
        .toBe('DEPLOYED');
      await expect.poll(() => status.innerText()).toBe('READY');
      expect(await w.page.evaluate('window.unreloaded')).toBe(true);
      // The event that moved the revision to DEPLOYED reached the page over the stream…
      const deployed = (
        await api.http.get(`/v2/events?limit=100&deployment_id=${id}&types=revision.status_changed`)
      ).body.resources.find((e: any) => e.revision_id === revisionId && e.data.to === 'DEPLOYED');
      expect(deployed).toBeDefined();
      await expect
        .poll(async () => BigInt((await indicator.getAttribute('data-last-event-id')) ?? '0') >= BigInt(deployed.id))
        .toBe(true);
      // …and the page never fell back to polling meanwhile.
      expect(((await w.page.evaluate('window.modes')) as string[]).filter((m) => m !== 'live')).toEqual([]);
      expect(await indicator.innerText()).toBe('Live: updates as events arrive');

      // The name filter maps to the list API: another name hides the row.
      await w.page.getByLabel('Name contains').fill('no-such-name');
      await w.page.getByRole('button', { name: 'Apply filters' }).click();
      await row.waitFor({ state: 'detached' });
      await w.page.getByLabel('Name contains').fill('live-tab');
      await w.page.getByRole('button', { name: 'Apply filters' }).click();
      await row.waitFor();
      // Status, type and tag filters too.
      const apply = async (label: string, value: string) => {
        await w.page.getByLabel(label).selectOption(value);
        await w.page.getByRole('button', { name: 'Apply filters' }).click();
      };
      expect((await api.http.put(`/v2/deployments/${id}/tags`, { tag_value_ids: [mine] })).status).toBe(200);
      await apply('Tag', other);
      await row.waitFor({ state: 'detached' });
      await apply('Tag', mine);
      await row.waitFor();
      await apply('Status', 'AWAITING_DELETE');
      await row.waitFor({ state: 'detached' });
      await apply('Status', 'READY');
      await row.waitFor();
      await apply('Type', 'prod');
      await row.waitFor({ state: 'detached' });
      await apply('Type', '');
      await row.waitFor();
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-deployments.png'), fullPage: true });
      await expectNoSecret(w);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('shows the timeline and rolls back through the UI: the old revision’s artifact becomes active', async () => {
    const { id, revisionId: first } = await createDeployment('roll-back-me', 'registry.example/agent:1');
    await agentApplies(first);
    const patched = await api.http.patch(`/v2/deployments/${id}`, {
      source_revision_config: { image_uri: 'registry.example/agent:2' },
      secrets: [
        { name: 'OPENAI_API_KEY', value: '********' },
        { name: 'EXTRA_FLAG', value: 'on' },
      ],
    });
    const second = patched.body.latest_revision_id as string;
    await agentApplies(second);
    expect((await deploymentOf(id)).active_revision_id).toBe(second);

    const w = await openPage();
    try {
      await signIn(w.page);
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}`);
      await w.page.getByRole('heading', { name: 'roll-back-me', level: 1 }).waitFor();
      const timeline = w.page.getByRole('list', { name: 'Revision timeline, newest first' });
      const firstItem = timeline.locator(`li[data-revision-id="${first}"]`);
      await firstItem.waitFor();
      expect(await timeline.locator('li.revision').count()).toBe(2);
      expect(await firstItem.locator('.statuses').innerText()).toContain('AWAITING_DEPLOY → DEPLOYING → DEPLOYED');
      expect(await firstItem.locator('.durations').innerText()).toMatch(/Deploying\s*\d/);
      expect(await timeline.locator(`li[data-revision-id="${second}"] .tag-active`).innerText()).toBe('active');
      // Each revision says why it exists and who made it; the one no longer serving says so.
      expect(await firstItem.locator('.revision-story').innerText()).toMatch(/^Created with the deployment by key/);
      expect(await timeline.locator(`li[data-revision-id="${second}"] .revision-story`).innerText()).toMatch(
        /^Settings changed by key/,
      );
      expect(await firstItem.locator('.tag-superseded').innerText()).toBe('superseded');
      expect(await timeline.locator(`li[data-revision-id="${second}"] .tag-superseded`).count()).toBe(0);
      expect(await w.page.getByRole('img', { name: /Phase durations of 2 revisions/ }).count()).toBe(1);
      // Secrets by name only.
      expect(await w.page.getByRole('list', { name: 'Secrets (values hidden)' }).innerText()).toContain(
        'OPENAI_API_KEY',
      );

      await firstItem.getByRole('button', { name: `Roll back to revision ${first.slice(0, 8)}` }).click();
      const dialog = w.page.getByRole('dialog', { name: `Roll back to revision ${first.slice(0, 8)}` });
      const changes = dialog.getByRole('table', { name: 'What changes' });
      const image = changes.getByRole('row', { name: /Image \/ artifact/ });
      expect(await image.innerText()).toMatch(/registry\.example\/agent:2\s+registry\.example\/agent:1/);
      // The secret the rollback takes away, by name (values are never shown).
      expect(await changes.getByRole('row', { name: /Secrets removed/ }).innerText()).toMatch(/EXTRA_FLAG\s+—/);
      await dialog.getByRole('button', { name: 'Roll back' }).click();
      await dialog.waitFor({ state: 'hidden' });

      const third = await eventually(
        () => deploymentOf(id),
        (d) => d.latest_revision_id !== second,
      );
      const rollback = third.latest_revision_id as string;
      expect((await revisionOf(id, rollback)).redeployed_from).toBe(first);
      await agentApplies(rollback);
      const after = await eventually(
        () => deploymentOf(id),
        (d) => d.active_revision_id === rollback,
      );
      const active = await revisionOf(id, after.active_revision_id);
      expect(active).toMatchObject({
        status: 'DEPLOYED',
        redeployed_from: first,
        image_uri: (await revisionOf(id, first)).image_uri,
      });
      // The page follows by itself: the new revision shows as the active one.
      await timeline.locator(`li[data-revision-id="${rollback}"] .tag-active`).waitFor({ timeout: 15_000 });
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-deployment.png'), fullPage: true });
      // The serving revision's Logs link opens its deploy (runtime) log; a replaced one's, its build log.
      await timeline.getByRole('link', { name: `Logs of revision ${rollback.slice(0, 8)}` }).click();
      await w.page.getByRole('log', { name: 'deploy log' }).waitFor();
      expect(await w.page.getByRole('radio', { name: 'Deploy' }).isChecked()).toBe(true);
      await w.page.goBack();
      await timeline.getByRole('link', { name: `Logs of revision ${first.slice(0, 8)}` }).click();
      await w.page.getByRole('log', { name: 'build log' }).waitFor();
      expect(await w.page.getByRole('radio', { name: 'Build' }).isChecked()).toBe(true);
      await w.page.goBack();
      // The overview's Logs link opens the deployment-wide log, not one revision's.
      const logs = w.page.getByRole('region', { name: 'Overview' }).getByRole('link', { name: 'Logs', exact: true });
      expect(await logs.getAttribute('href')).toBe(`#/deployments/${id}?tab=logs`);
      await expectNoSecret(w);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('follows a running revision’s log: a line written after the page opened appears; level and text filter it', async () => {
    const { id, revisionId } = await createDeployment('log-follow');
    await eventually(
      () => revisionOf(id, revisionId),
      (r) => r.status === 'DEPLOYING',
    );
    const w = await openPage();
    try {
      await signIn(w.page);
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}/revisions/${revisionId}/logs`);
      await w.page.getByRole('heading', { name: `Logs of revision ${revisionId.slice(0, 8)}` }).waitFor();
      await w.page.getByRole('radio', { name: 'Deploy' }).check();
      const log = w.page.getByRole('log', { name: 'deploy log' });
      await log.waitFor();
      const token = randomUUID();
      // Written as the workers write log lines (secret values masked), after the view is open.
      const writer = new RevisionLogWriter(api.dataSource, revisionId, 'deploy', [SECRET]);
      writer.line(`waiting for pods ${token}`);
      writer.line(`pod crashed ${token}`, 'error');
      writer.line(`connecting with OPENAI_API_KEY=${SECRET} ${token}`);
      await writer.close();
      await log.getByText(`waiting for pods ${token}`).waitFor({ timeout: 15_000 });
      await log.getByText(`pod crashed ${token}`).waitFor();
      expect(await log.getByText(`connecting with OPENAI_API_KEY=`).innerText()).not.toContain(SECRET);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-logs.png'), fullPage: true });

      await w.page.getByLabel('Level').selectOption('error');
      await log.getByText(`waiting for pods ${token}`).waitFor({ state: 'detached' });
      expect(await log.getByText(`pod crashed ${token}`).count()).toBe(1);
      await w.page.getByLabel('Level').selectOption('');
      await w.page.getByLabel('Search').fill('WAITING FOR');
      await log.getByText(`pod crashed ${token}`).waitFor({ state: 'detached' });
      expect(await log.locator('li').count()).toBeGreaterThan(0);
      for (const text of await log.locator('li').allInnerTexts()) expect(text.toLowerCase()).toContain('waiting for');

      // The deployment page can interrupt this running revision (once confirmed).
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}`);
      await w.page.getByRole('button', { name: 'Interrupt the running revision' }).click();
      await w.page
        .getByRole('dialog', { name: 'Interrupt?' })
        .getByRole('button', { name: 'Interrupt', exact: true })
        .click();
      await w.page.getByRole('status').filter({ hasText: 'interrupted' }).waitFor();
      expect((await revisionOf(id, revisionId)).status).toBe('INTERRUPTED');
      await expectNoSecret(w);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('says why a revision failed, in the timeline and in the table', async () => {
    const { id, revisionId } = await createDeployment('fails-to-roll-out');
    const trace = ['    at Server.listen (node:net:1234:5)', '    at main (/app/server.js:10:3)'];
    await agentApplies(revisionId, 'DEPLOY_FAILED', ['pods crash-looping: exit code 3', ...trace].join('\n'));
    const w = await openPage();
    try {
      await signIn(w.page);
      const row = w.page.locator(`tr[data-deployment-id="${id}"]`);
      await expect
        .poll(() => row.locator('.latest-status').innerText(), { timeout: 15_000 })
        .toMatch(/DEPLOY_FAILED\s+.*pods crash-looping: exit code 3/);
      // The stack trace is not a wall of text in the cell: its first line, the rest one click away.
      const message = row.locator('.latest-status details');
      expect(await row.locator('.latest-status').innerText()).not.toContain('at Server.listen');
      await message.locator('summary').click();
      expect(await message.locator('pre').innerText()).toContain(trace[1]!.trim());
      // No revision serves (the only one failed): never READY.
      expect(await row.locator('td[data-label="Status"]').innerText()).toBe('No revision serving yet');
      await row.getByRole('link', { name: 'fails-to-roll-out' }).click();
      await w.page.getByRole('heading', { name: 'fails-to-roll-out', level: 1 }).waitFor();
      expect(await w.page.getByRole('region', { name: 'Overview' }).innerText()).toMatch(
        /Status: No revision serving yet\n/,
      );
      const item = w.page.locator(`li[data-revision-id="${revisionId}"]`);
      await item.waitFor();
      expect(await item.locator('.failure').innerText()).toMatch(/^Why: .*pods crash-looping: exit code 3/);
      expect(await item.locator('.statuses').innerText()).toContain('DEPLOYING → DEPLOY_FAILED');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('deletes a deployment only once its name is typed', async () => {
    const { id } = await createDeployment('delete-me');
    const w = await openPage();
    try {
      await signIn(w.page);
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}`);
      await w.page.getByRole('button', { name: 'Delete deployment' }).click();
      const dialog = w.page.getByRole('dialog', { name: 'Delete delete-me' });
      const confirm = dialog.getByRole('button', { name: 'Delete', exact: true });
      expect(await confirm.isDisabled()).toBe(true);
      await dialog.getByLabel('Deployment name').fill('delete-m');
      expect(await confirm.isDisabled()).toBe(true);
      expect((await api.http.get(`/v2/deployments/${id}`)).status).toBe(200);
      await dialog.getByLabel('Deployment name').fill('delete-me');
      await confirm.click();
      await eventually(
        () => api.http.get(`/v2/deployments/${id}`),
        (res) => res.status === 404 || res.body.status === 'AWAITING_DELETE',
      );
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('shows an unknown deployment as the API’s words, not a blank page', async () => {
    const w = await openPage();
    try {
      await signIn(w.page);
      const missing = randomUUID();
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${missing}`);
      await expect
        .poll(() => w.page.getByRole('alert').innerText(), { timeout: 15_000 })
        .toBe(`Deployment ID ${missing} not found.`);
      expect(w.errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('lists listeners with last_seen_at (stale ones marked) and integrations with their repositories', async () => {
    const quiet = await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: `quiet-${randomUUID()}`,
      compute_config: { k8s_namespaces: null },
    });
    expect(quiet.status).toBe(201);
    await agent.get(`/v2/listeners/${listenerId}/desired-state`);
    const root = integrationRoot(api, 'console-repos');
    await initRepo(path.join(root, 'support-agent'));
    await createLocalIntegration(api, 'console-repos', root);
    const w = await openPage();
    try {
      await signIn(w.page);
      await w.page.getByRole('link', { name: 'Listeners and integrations' }).click();
      await w.page.getByRole('heading', { name: 'Listeners and integrations', level: 1 }).waitFor();
      const seen = w.page.locator(`tr[data-listener-id="${listenerId}"]`);
      const stale = w.page.locator(`tr[data-listener-id="${quiet.body.id}"]`);
      await seen.waitFor();
      expect(await seen.innerText()).toMatch(/\d+ s ago/);
      expect(await seen.getByText('stale').count()).toBe(0);
      expect(await stale.innerText()).toMatch(/never\s*stale/);
      const integration = w.page.getByRole('article', { name: /console-repos/ });
      await integration.getByText('console-repos/support-agent').waitFor();
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-listeners.png'), fullPage: true });
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('can be used with the keyboard alone: sign in, open a deployment', async () => {
    const { id } = await createDeployment('keyboard-only');
    const w = await openPage();
    try {
      await w.page.goto(`${api.baseUrl}/console/`);
      // The key field has focus on arrival; Enter submits.
      await expect.poll(() => w.page.evaluate('document.activeElement?.id')).toBe('key');
      await w.page.keyboard.type(api.adminKey);
      expect(await w.page.inputValue('#key')).toBe(api.adminKey);
      await w.page.keyboard.press('Enter');
      // On a timeout, say what the page showed instead (a sign-in error, another page).
      await w.page
        .locator(`tr[data-deployment-id="${id}"]`)
        .waitFor()
        .catch(async (err: Error) => {
          throw new Error(
            `${err.message}\nthe page at ${w.page.url()} showed:\n${(await w.page.locator('body').innerText()).slice(0, 2_000)}`,
          );
        });
      const focused = () => w.page.evaluate('document.activeElement?.textContent');
      for (let i = 0; i < 40 && (await focused()) !== 'keyboard-only'; i++) await w.page.keyboard.press('Tab');
      expect(await focused()).toBe('keyboard-only');
      await w.page.keyboard.press('Enter');
      await w.page.getByRole('heading', { name: 'keyboard-only', level: 1 }).waitFor();
      expect(w.page.url()).toContain(`#/deployments/${id}`);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('passes axe-core’s WCAG 2 A and AA checks on every page', async () => {
    const { id, revisionId } = await createDeployment('accessible');
    await agentApplies(revisionId);
    // Only this test injects a script (axe) into the page, so only it bypasses the policy.
    const w = await openPage({ bypassCSP: true });
    try {
      const audit = async (page: string) => {
        await w.page.evaluate(axe.source);
        const result = (await w.page.evaluate(
          "axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })",
        )) as axe.AxeResults;
        const found = result.violations.map(
          (v) => `${page}: ${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`,
        );
        expect(found).toEqual([]);
        // axe did run: it checked things and found them right (labels among them).
        expect(result.passes.map((p) => p.id)).toEqual(
          expect.arrayContaining(page === 'sign-in' ? ['label'] : ['document-title']),
        );
      };
      await w.page.goto(`${api.baseUrl}/console/`);
      await w.page.getByLabel('API key').waitFor();
      await audit('sign-in');
      await w.page.getByLabel('API key').fill(api.adminKey);
      await w.page.getByRole('button', { name: 'Sign in' }).click();
      await w.page.locator(`tr[data-deployment-id="${id}"] .active-status [data-status="DEPLOYED"]`).waitFor();
      await audit('deployments');
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}`);
      await w.page.locator(`li[data-revision-id="${revisionId}"]`).waitFor();
      await audit('deployment');
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}/revisions/${revisionId}/logs`);
      await w.page.getByRole('log').waitFor();
      await audit('logs');
      await w.page.goto(`${api.baseUrl}/console/#/deployments/${id}?tab=logs`);
      await w.page.getByRole('log', { name: 'Deployment log' }).waitFor();
      await audit('deployment logs');
      await w.page.goto(`${api.baseUrl}/console/#/listeners`);
      await w.page.locator(`tr[data-listener-id="${listenerId}"]`).waitFor();
      await audit('listeners');
    } finally {
      await w.close();
    }
  }, 60_000);
});

mkdirSync(OUTPUT, { recursive: true });
