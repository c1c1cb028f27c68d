import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { closeBrowser, curlsShown, expectFitsAfterResize, openConsolePage, signInAt } from '../support/console-page.js';
import { repohostFixture, type RepohostFixture } from '../support/git-fixtures.js';
import { freePort } from '../support/ports.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A repohost deployment's previews on the console (docs/api.md, Previews), against the real api
 * (serving the console the test run's global setup builds) with a `local` integration over a real
 * git repository. Previews are opened through the API, as a forge's automation would; the
 * parent's page lists them (number linked to the pull request, branch, status, URL, expiry, a
 * link to each preview's page), a preview's page says which pull request it is and links back,
 * and Tear down, confirmed, starts its delete. No worker runs here, so a torn-down preview stays
 * in the API's list as AWAITING_DELETE (its delete started, not finished): the page shows it so.
 * Screenshots go to test/browser/output/.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

let api: TestApi;
let repo: RepohostFixture;

beforeAll(async () => {
  // An edge port (none listens here) gives each deployment, its previews too, a URL of its name at the edge.
  api = await startTestApi({ SLIPWAY_EDGE_HTTP_PORT: String(await freePort()) });
  repo = await repohostFixture(api);
}, 60_000);

afterAll(async () => {
  await closeBrowser();
  await api?.close();
});

const consoleUrl = () => `${api.baseUrl}/console/`;

interface PreviewBody {
  id: string;
  name: string;
  url: string | null;
  status: string;
  preview: {
    parent_id: string;
    pull_request: { number: number; head_ref: string; url: string | null };
    expires_at: string;
  };
}

/** A repohost deployment over the fixture repository; nothing builds here (no worker runs). */
async function parent(previews: Record<string, unknown> | null): Promise<{ id: string; name: string }> {
  const res = await api.http.post('/v2/deployments', {
    name: `previews-${randomUUID().slice(0, 8)}`,
    source: 'repohost',
    source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl, deployment_type: 'dev', previews },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function open(parentId: string, body: Record<string, unknown>): Promise<PreviewBody> {
  const res = await api.http.post(`/v2/deployments/${parentId}/previews`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const previewsOf = async (id: string) =>
  (await api.http.get(`/v2/deployments/${id}/previews`)).body.resources as PreviewBody[];

describe.runIf(hasChromium || browserRequired)('the Previews section of a deployment’s page', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('lists the previews with their pull requests, leads to a preview’s page and back, ' +
    'and tears one down after a confirmation', async () => {
    const p = await parent({ enabled: true });
    const seven = await open(p.id, { ref: 'feature/login', number: 7, url: 'https://forge.example/pulls/7' });
    const eight = await open(p.id, { ref: 'fix/typo', number: 8 });
    // Only to inject axe (WCAG checks of the section) does this page bypass the policy.
    const w = await openConsolePage({ bypassCSP: true });
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${p.id}`, api.adminKey, p.name);
      const section = w.page.getByRole('region', { name: 'Previews', exact: true });
      const card7 = section.locator('li[data-number="7"]');
      const card8 = section.locator('li[data-number="8"]');
      await card7.waitFor();
      await card8.waitFor();
      expect(
        await section
          .locator('li[data-number]')
          .evaluateAll((cards) => cards.map((c) => c.getAttribute('data-number'))),
      ).toEqual(['8', '7']);

      // #7: its number links to the pull request; branch, commit (none resolved yet), status, URL, expiry, its page.
      expect(await card7.getByRole('heading', { level: 3 }).innerText()).toBe('Pull request #7');
      expect(await card7.getByRole('link', { name: '#7', exact: true }).getAttribute('href')).toBe(
        'https://forge.example/pulls/7',
      );
      expect(await card7.locator('dd code').first().innerText()).toBe('feature/login');
      expect(await card7.locator('div').filter({ hasText: 'Commit' }).locator('dd').innerText()).toBe('—');
      expect(await card7.locator('.badge').getAttribute('data-status')).toBe(seven.status);
      expect(seven.url).toBeTruthy();
      expect(await card7.getByRole('link', { name: seven.url!, exact: true }).getAttribute('href')).toBe(seven.url);
      const expiry = card7.locator('time');
      expect(await expiry.innerText()).toMatch(/^expires in [23] days$/);
      expect(await expiry.getAttribute('datetime')).toBe(seven.preview.expires_at);
      expect(await expiry.getAttribute('title')).toBeTruthy();
      expect(await card7.getByRole('link', { name: seven.name, exact: true }).getAttribute('href')).toBe(
        `#/deployments/${seven.id}`,
      );

      // #8: opened without a URL, so its number is plain text.
      expect(await card8.getByRole('heading', { level: 3 }).innerText()).toBe('Pull request #8');
      expect(await card8.getByRole('link', { name: '#8', exact: true }).count()).toBe(0);
      expect(await card8.locator('dd code').first().innerText()).toBe('fix/typo');
      expect(await card8.getByRole('link', { name: eight.name, exact: true }).getAttribute('href')).toBe(
        `#/deployments/${eight.id}`,
      );

      await w.page.screenshot({ path: path.join(OUTPUT, 'console-previews.png'), fullPage: true });
      await w.page.evaluate(axe.source);
      const audit = (await w.page.evaluate("axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })")) as axe.AxeResults;
      expect(audit.violations.map((v) => `${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);

      // The preview's own page: which pull request, and the way back to its parent.
      await card7.getByRole('link', { name: seven.name, exact: true }).click();
      await w.page.getByRole('heading', { name: seven.name, level: 1 }).waitFor();
      const line = w.page.locator('.preview-of');
      const back = line.getByRole('link', { name: p.name, exact: true });
      await back.waitFor();
      expect(await line.innerText()).toMatch(
        new RegExp(`^Preview of pull request #7 of ${p.name} \\(expires in [23] days\\)\\.$`),
      );
      expect(await back.getAttribute('href')).toBe(`#/deployments/${p.id}`);
      expect(await line.getByRole('link', { name: '#7', exact: true }).getAttribute('href')).toBe(
        'https://forge.example/pulls/7',
      );
      expect(await w.page.getByRole('heading', { name: 'Previews', exact: true }).count()).toBe(0);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-preview-page.png'), fullPage: true });
      await back.click();
      await w.page.getByRole('heading', { name: p.name, level: 1 }).waitFor();
      await card8.waitFor();

      // Tear down #8, confirmed: its delete starts, the API's list and the page say so; #7 stays.
      await card8.getByRole('button', { name: 'Tear down the preview of pull request #8' }).click();
      const dialog = w.page.getByRole('dialog', { name: 'Tear down preview?' });
      expect(await dialog.innerText()).toContain(`pull request #8 (${eight.name})`);
      await dialog.getByRole('button', { name: 'Tear down preview' }).click();
      await card8.locator('.badge[data-status="AWAITING_DELETE"]').waitFor();
      const listed = await previewsOf(p.id);
      expect(listed.map((d) => [d.preview.pull_request.number, d.status === 'AWAITING_DELETE'])).toEqual([
        [8, true],
        [7, false],
      ]);
      expect(await card8.getByRole('button', { name: 'Tear down the preview of pull request #8' }).isDisabled()).toBe(
        true,
      );
      expect(await card8.locator('div').filter({ hasText: 'Expiry' }).locator('dd').innerText()).toBe(
        'being torn down',
      );
      expect(await card7.locator('.badge').getAttribute('data-status')).not.toBe('AWAITING_DELETE');
      expect(await card7.getByRole('button', { name: 'Tear down the preview of pull request #7' }).isDisabled()).toBe(
        false,
      );
      const curls = await curlsShown(w.page, section);
      expect(curls.at(-1)).toContain(`curl -X DELETE '${api.baseUrl}/v2/deployments/${p.id}/previews/8'`);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-previews-torn-down.png'), fullPage: true });

      await w.page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(w.page, 375);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('says how to open one where previews are on and none exist, and is not there where previews are off', async () => {
    const on = await parent({ enabled: true });
    const off = await parent(null);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${on.id}`, api.adminKey, on.name);
      const section = w.page.getByRole('region', { name: 'Previews', exact: true });
      const empty = section.locator('.empty-state');
      await empty.waitFor();
      expect(await empty.innerText()).toContain(`POST /v2/deployments/${on.id}/previews`);
      expect(await section.locator('li[data-number]').count()).toBe(0);

      await w.page.goto(`${consoleUrl()}#/deployments/${off.id}`);
      await w.page.getByRole('heading', { name: off.name, level: 1 }).waitFor();
      await w.page.getByRole('heading', { name: 'Configuration', exact: true, level: 2 }).waitFor();
      // The section reads the (empty) list before deciding: give it the time a read takes.
      await expect
        .poll(() =>
          w.page.evaluate(
            (id) =>
              performance.getEntriesByType('resource').some((e) => e.name.endsWith(`/v2/deployments/${id}/previews`)),
            off.id,
          ),
        )
        .toBe(true);
      await w.page.waitForTimeout(200);
      expect(await w.page.getByRole('heading', { name: 'Previews', exact: true }).count()).toBe(0);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});

mkdirSync(OUTPUT, { recursive: true });
