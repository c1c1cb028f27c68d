import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { agentApplies, openConsolePage, pageWidth, signInAt } from '../support/console-page.js';
import { createImageDeployment, otherWorkspaceClient } from '../support/fixtures.js';
import { listenerStandForFile } from '../support/listener-stand.js';
import { eventually } from '../support/service-process.js';

/**
 * Finding and getting around the console: its entrances (`/`, the deploy CLIs' "View status"
 * link), addresses that keep the list's filters, what an empty list says, dark mode and a phone's
 * width. The real api serves the console (built by the test run's global setup); deployments are
 * `external_container` ones; the test plays the listener agent (it would run in a customer's
 * cluster) where a rollout must finish. Screenshots go to test/browser/output/.
 */
/** The published deploy CLI's own function for its "View status" link, as it runs after a deploy (the package ships no types). */
const { getDeploymentStatusUrl } = (await import(
  '@langchain/langgraph-cli/dist/cli/utils/deploy-helpers.mjs' as string
)) as {
  getDeploymentStatusUrl: (deployment: unknown, deploymentId: string, hostUrl: string) => string | null;
};
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

const stand = listenerStandForFile('console-basics');

const create = async (name: string) =>
  (await createImageDeployment(stand.api, name, stand.listenerId, {
    image: 'registry.example/agent:1',
  })) as unknown as {
    id: string;
    name: string;
    tenant_id: string;
  };
const consoleUrl = () => `${stand.api.baseUrl}/console/`;

describe('the console’s entrances over HTTP', () => {
  it('redirects / to the console under each prefix, for GET and HEAD, and keeps /console', async () => {
    for (const prefix of ['', '/api-host']) {
      for (const method of ['GET', 'HEAD']) {
        const res = await fetch(`${stand.api.baseUrl}${prefix}/`, { method, redirect: 'manual' });
        expect(res.status, `${method} ${prefix}/`).toBe(302);
        expect(res.headers.get('location')).toBe(`${prefix}/console/`);
      }
      const bare = await fetch(`${stand.api.baseUrl}${prefix}/console`, { redirect: 'manual' });
      expect(bare.headers.get('location')).toBe(`${prefix}/console/`);
    }
    // Other methods at / stay the API's JSON answers; the API itself is where it was.
    const post = await fetch(`${stand.api.baseUrl}/`, { method: 'POST' });
    expect(post.status).toBeGreaterThanOrEqual(400);
    expect(post.status).toBeLessThan(500);
    expect((await stand.api.http.get('/v2/deployments')).status).toBe(200);
  });

  it('redirects the deploy CLI’s "View status" URL to that deployment’s page, and nothing else', async () => {
    const d = await create('cli-status-http');
    for (const prefix of ['', '/api-host']) {
      const url = getDeploymentStatusUrl(d, d.id, `${stand.api.baseUrl}${prefix}`);
      expect(url).toBe(`${stand.api.baseUrl}${prefix}/o/${d.tenant_id}/host/deployments/${d.id}`);
      const res = await fetch(url!, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${prefix}/console/#/deployments/${d.id}?workspace=${d.tenant_id}`);
    }
    // A tenant that is no UUID is left out; not a deployment id: the API's 404, never a redirect built from what was sent.
    const odd = await fetch(`${stand.api.baseUrl}/o/%3Cscript%3E/host/deployments/${d.id}`, { redirect: 'manual' });
    expect(odd.headers.get('location')).toBe(`/console/#/deployments/${d.id}`);
    const other = await fetch(`${stand.api.baseUrl}/o/x/host/deployments/%2F%2Fevil.example`, { redirect: 'manual' });
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ detail: 'Not Found' });
  });
});

describe.runIf(hasChromium || browserRequired)('the console in Chromium: finding it, addresses, themes, widths', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('shows the console at /', async () => {
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${stand.api.baseUrl}/`, stand.api.adminKey);
      expect(new URL(w.page.url()).pathname).toBe('/console/');
      expect(await w.page.title()).toBe('Slipway console');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('lands on the deployment’s page from the deploy CLI’s "View status" link', async () => {
    const d = await create('cli-status-page');
    const w = await openConsolePage();
    try {
      await signInAt(
        w.page,
        getDeploymentStatusUrl(d, d.id, stand.api.baseUrl)!,
        stand.api.adminKey,
        'cli-status-page',
      );
      expect(w.page.url()).toBe(`${stand.api.baseUrl}/console/#/deployments/${d.id}?workspace=${d.tenant_id}`);
      // An image deployed as it is is not known to be an agent server: no Studio link.
      expect(await w.page.getByRole('region', { name: 'Use this agent' }).count()).toBe(0);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('preselects the status link’s workspace for an organization key', async () => {
    const d = await create('cli-status-org-key');
    const orgKey = await stand.api.mintKey({ scope: 'organization', workspaceId: null, role: 'member' });
    const w = await openConsolePage();
    try {
      await w.page.goto(getDeploymentStatusUrl(d, d.id, stand.api.baseUrl)!);
      await w.page.getByLabel('API key').fill(orgKey);
      await w.page.getByRole('button', { name: 'Sign in' }).click();
      const workspace = w.page.getByLabel('Workspace');
      await workspace.waitFor();
      expect(await workspace.inputValue()).toBe(d.tenant_id);
      await w.page.getByRole('button', { name: 'Sign in' }).click();
      await w.page.getByRole('heading', { name: 'cli-status-org-key', level: 1 }).waitFor();
      // The only console error is the browser's note about the refused (403, no workspace) request.
      expect(w.errors.filter((e) => !/status of 403/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('keeps the list’s filters in the address: a reload keeps them, back and forward move between them', async () => {
    const tag = randomUUID().slice(0, 8);
    const [kept, hidden] = await Promise.all([create(`filter-${tag}-kept`), create(`other-${tag}`)]);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, consoleUrl(), stand.api.adminKey);
      const row = (id: string) => w.page.locator(`tr[data-deployment-id="${id}"]`);
      await w.page.getByLabel('Name contains').fill(tag);
      await w.page.getByRole('button', { name: 'Apply filters' }).click();
      await row(hidden.id).waitFor();
      await w.page.getByLabel('Name contains').fill(`filter-${tag}`);
      await w.page.getByLabel('Status').selectOption('READY');
      await w.page.getByRole('button', { name: 'Apply filters' }).click();
      await row(hidden.id).waitFor({ state: 'detached' });
      const query = new URLSearchParams(new URL(w.page.url()).hash.split('?')[1]);
      expect(Object.fromEntries(query)).toEqual({ name_contains: `filter-${tag}`, status: 'READY' });

      await w.page.reload();
      await row(kept.id).waitFor();
      expect(await row(hidden.id).count()).toBe(0);
      expect(await w.page.getByLabel('Name contains').inputValue()).toBe(`filter-${tag}`);
      expect(await w.page.getByLabel('Status').inputValue()).toBe('READY');

      // Back: the earlier filter (both rows); forward: the later one again.
      await w.page.goBack();
      await row(hidden.id).waitFor();
      expect(await w.page.getByLabel('Name contains').inputValue()).toBe(tag);
      await w.page.goForward();
      await row(kept.id).waitFor();
      expect(await row(hidden.id).count()).toBe(0);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('never shows one filter’s rows under another: not while its read runs, not when it fails; a refresh keeps them', async () => {
    const tag = randomUUID().slice(0, 8);
    const [alpha, beta] = await Promise.all([create(`stale-${tag}-alpha`), create(`stale-${tag}-beta`)]);
    // The list's own read (not its revisions') for one `name_contains`.
    const listOf = (name: string) => (url: URL) =>
      url.pathname.endsWith('/v2/deployments') && url.searchParams.get('name_contains') === name;
    const w = await openConsolePage();
    const { page } = w;
    const row = (id: string) => page.locator(`tr[data-deployment-id="${id}"]`);
    try {
      await signInAt(page, `${consoleUrl()}#/?name_contains=stale-${tag}-alpha`, stand.api.adminKey);
      await row(alpha.id).waitFor();

      // A refresh of the same filter (a deployment created: an event) keeps the rows while it reads.
      const alphaList = listOf(`stale-${tag}-alpha`);
      let refreshing!: () => void;
      const refreshStarted = new Promise<void>((resolve) => (refreshing = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      await page.route(alphaList, async (route) => {
        refreshing();
        await released;
        await route.continue();
      });
      const alpha2 = await create(`stale-${tag}-alpha-2`);
      await refreshStarted;
      expect(await row(alpha.id).count()).toBe(1);
      expect(await page.getByText('Loading deployments…').count()).toBe(0);
      release();
      await row(alpha2.id).waitFor();
      await page.unroute(alphaList);

      // Another filter, whose read is held and then refused. From the render that changes the
      // address on, no alpha row is in the page: not during the read, not beside its error.
      const betaList = listOf(`stale-${tag}-beta`);
      let refuse!: () => void;
      const refused = new Promise<void>((resolve) => (refuse = resolve));
      await page.route(betaList, async (route) => {
        await refused;
        await route.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({ detail: 'The list cannot be read now.' }),
        });
      });
      await page.evaluate(`(() => {
        const ids = ${JSON.stringify([alpha.id, alpha2.id])};
        window.staleSeen = [];
        addEventListener('hashchange', () => new MutationObserver(() => {
          for (const id of ids) if (document.querySelector('tr[data-deployment-id="' + id + '"]')) staleSeen.push(id);
        }).observe(document.body, { childList: true, subtree: true, characterData: true }), { once: true });
      })()`);
      await page.evaluate(`location.hash = ${JSON.stringify(`#/?name_contains=stale-${tag}-beta`)}`);
      await expect.poll(() => page.getByLabel('Name contains').inputValue()).toBe(`stale-${tag}-beta`);
      expect(await row(alpha.id).count()).toBe(0);
      await page.getByText('Loading deployments…').waitFor();
      refuse();
      await page.getByRole('alert').filter({ hasText: 'The list cannot be read now.' }).waitFor();
      expect(await row(alpha.id).count()).toBe(0);
      expect(await row(alpha2.id).count()).toBe(0);
      expect(await page.evaluate('staleSeen')).toEqual([]);

      // Read again, answered this time: the beta row alone.
      await page.unroute(betaList);
      await page.reload();
      await row(beta.id).waitFor();
      expect(await row(alpha.id).count()).toBe(0);
      // The only console errors are the browser's notes about the refused reads.
      expect(w.errors.filter((e) => !/status of 503/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('goes back to the list after deleting a deployment', async () => {
    const d = await create('deleted-then-listed');
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${d.id}`, stand.api.adminKey, 'deleted-then-listed');
      // The destructive action looks it: filled with the theme's failure colour.
      expect(
        await w.page
          .getByRole('button', { name: 'Delete deployment' })
          .evaluate(
            (b) =>
              (
                globalThis as unknown as { getComputedStyle: (e: typeof b) => { backgroundColor: string } }
              ).getComputedStyle(b).backgroundColor,
          ),
      ).toBe('rgb(185, 28, 28)');
      await w.page.getByRole('button', { name: 'Delete deployment' }).click();
      const dialog = w.page.getByRole('dialog', { name: 'Delete deleted-then-listed' });
      await dialog.getByLabel('Deployment name').fill('deleted-then-listed');
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await w.page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
      expect(new URL(w.page.url()).hash).toBe('#/');
      await eventually(
        () => stand.api.http.get(`/v2/deployments/${d.id}`),
        (res) => res.status === 404 || res.body.status === 'AWAITING_DELETE',
      );
      expect(await w.page.getByRole('alert').count()).toBe(0);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('says how to create a first deployment when there is none, and how to widen filters that match none', async () => {
    const empty = await otherWorkspaceClient(stand.api, `empty-${randomUUID().slice(0, 8)}`);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, consoleUrl(), empty.key);
      const state = w.page.getByRole('region', { name: 'No deployments yet' });
      await state.waitFor();
      expect(await state.innerText()).toContain(`deploy --remote --host-url ${stand.api.baseUrl} --name my-agent`);
      expect(await state.getByRole('link', { name: 'API reference' }).getAttribute('href')).toBe('/docs');
      expect(await w.page.getByRole('table').count()).toBe(0);

      await w.page.getByLabel('Name contains').fill('nothing-like-this');
      await w.page.getByRole('button', { name: 'Apply filters' }).click();
      const none = w.page.getByRole('region', { name: 'No deployments match these filters' });
      await none.waitFor();
      await none.getByRole('link', { name: 'show every deployment' }).click();
      await state.waitFor();
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('follows the system’s dark mode, and remembers the toggle', async () => {
    const d = await create('dark-mode');
    // Only to inject axe (its contrast checks on the dark colours) does this page bypass the policy.
    const w = await openConsolePage({ colorScheme: 'dark', bypassCSP: true });
    const background = () => w.page.evaluate('getComputedStyle(document.documentElement).backgroundColor');
    try {
      await signInAt(w.page, consoleUrl(), stand.api.adminKey);
      await w.page.locator(`tr[data-deployment-id="${d.id}"]`).waitFor();
      expect(await w.page.evaluate('document.documentElement.dataset.theme')).toBe('dark');
      expect(await background()).toBe('rgb(3, 7, 18)');
      // The toggle says what it does: dark is on, so it offers light (an action: no aria-pressed).
      const toggle = w.page.locator('button.theme-toggle');
      expect(await toggle.innerText()).toBe('Light mode');
      expect(await w.page.getByRole('button', { name: 'Dark mode' }).count()).toBe(0);
      expect(await toggle.getAttribute('aria-pressed')).toBeNull();
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-dark.png'), fullPage: true });
      await w.page.evaluate(axe.source);
      const audit = (await w.page.evaluate("axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })")) as axe.AxeResults;
      expect(audit.violations.map((v) => `${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);
      expect(audit.passes.map((p) => p.id)).toContain('color-contrast');
      // Buttons have weights, in the theme's colours: the form's main action primary, the rest secondary.
      const background_of = (name: string) =>
        w.page
          .getByRole('button', { name, exact: true })
          .evaluate(
            (b) =>
              (
                globalThis as unknown as { getComputedStyle: (e: typeof b) => { backgroundColor: string } }
              ).getComputedStyle(b).backgroundColor,
          );
      expect(await background_of('Apply filters')).toBe('rgb(147, 197, 253)');
      expect(await background_of('Previous page')).toBe('rgb(17, 24, 39)');

      // Nothing stored until the user picks; then the pick wins over the system's, across reloads.
      expect(await w.page.evaluate('localStorage.length')).toBe(0);
      await w.page.getByRole('button', { name: 'Light mode' }).click();
      expect(await background()).toBe('rgb(249, 250, 251)');
      expect(await toggle.innerText()).toBe('Dark mode');
      expect(await background_of('Apply filters')).toBe('rgb(29, 78, 216)');
      expect(await background_of('Previous page')).toBe('rgb(255, 255, 255)');
      await w.page.reload();
      await w.page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
      expect(await w.page.evaluate('document.documentElement.dataset.theme')).toBe('light');
      expect(await w.page.getByRole('button', { name: 'Dark mode' }).getAttribute('aria-pressed')).toBeNull();
      expect(await w.page.evaluate("localStorage.getItem('slipway.console.theme')")).toBe('light');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('fits a 375 px wide screen: the list and a deployment’s page never scroll sideways', async () => {
    const d = await create(`a-rather-long-deployment-name-${randomUUID().replaceAll('-', '')}`);
    const w = await openConsolePage({ viewport: { width: 375, height: 800 }, isMobile: true, hasTouch: true });
    try {
      await signInAt(w.page, consoleUrl(), stand.api.adminKey);
      const row = w.page.locator(`tr[data-deployment-id="${d.id}"]`);
      await row.waitFor();
      expect(await pageWidth(w.page)).toBeLessThanOrEqual(375);
      // Each deployment is a card: its last value is on screen, not behind a sideways scroll.
      const last = (await row.locator('td').last().boundingBox())!;
      expect(last.x + last.width).toBeLessThanOrEqual(375);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-mobile-list.png'), fullPage: true });

      await w.page.goto(`${consoleUrl()}#/deployments/${d.id}`);
      await w.page.getByRole('heading', { name: d.name, level: 1 }).waitFor();
      await w.page.getByRole('list', { name: 'Revision timeline, newest first' }).waitFor();
      expect(await pageWidth(w.page)).toBeLessThanOrEqual(375);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-mobile-deployment.png'), fullPage: true });
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('shows the whole rollback table on a phone: the dialog fits the screen and its table scrolls', async () => {
    const long = (n: number) => `registry.example/team-with-a-long-name/agent-with-a-long-name:${'v'.repeat(40)}${n}`;
    const d = (await createImageDeployment(stand.api, 'rollback-on-a-phone', stand.listenerId, {
      image: long(1),
    })) as unknown as {
      id: string;
      latest_revision_id: string;
    };
    await agentApplies(stand.agent, stand.listenerId, d.latest_revision_id);
    const second = (
      await stand.api.http.patch(`/v2/deployments/${d.id}`, { source_revision_config: { image_uri: long(2) } })
    ).body.latest_revision_id as string;
    await agentApplies(stand.agent, stand.listenerId, second);
    const w = await openConsolePage({ viewport: { width: 375, height: 700 }, isMobile: true, hasTouch: true });
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${d.id}`, stand.api.adminKey, 'rollback-on-a-phone');
      const short = d.latest_revision_id.slice(0, 8);
      await w.page.getByRole('button', { name: `Roll back to revision ${short}` }).click();
      const dialog = w.page.getByRole('dialog', { name: `Roll back to revision ${short}` });
      const table = dialog.getByRole('table', { name: 'What changes' });
      await table.waitFor();
      const box = (await dialog.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(375);
      // The last column, cut off before, scrolls into view inside the dialog.
      const after = table
        .getByRole('row', { name: /Image \/ artifact/ })
        .getByRole('cell')
        .last();
      expect(await after.innerText()).toBe(long(1));
      await after.scrollIntoViewIfNeeded();
      const cell = (await after.boundingBox())!;
      expect(cell.x).toBeGreaterThanOrEqual(box.x);
      expect(cell.x + cell.width).toBeLessThanOrEqual(box.x + box.width);
      expect(await dialog.getByRole('button', { name: 'Roll back', exact: true }).isVisible()).toBe(true);
      expect(await pageWidth(w.page)).toBeLessThanOrEqual(375);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});
