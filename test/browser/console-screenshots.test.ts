import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import {
  axeViolations,
  closeBrowser,
  expectFitsAfterResize,
  openConsolePage,
  signInAt,
  visitAndAudit,
} from '../support/console-page.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { prepareScreenshots, shoot, type Theme } from '../support/screenshots.js';

/**
 * Every page of the console, in the light and the dark theme, on one stand (the real api,
 * builder and deployer; a plain Node app built and running, an image deployment waiting on a
 * listener): each page's heading and key content rendered, no console errors, no axe-core WCAG 2
 * A/AA violation, then a screenshot of the viewport to test/browser/output/. With
 * SLIPWAY_WRITE_SCREENSHOTS=1 (`pnpm docs:screenshots`) they are copied to docs/images/ as well,
 * for docs/console.md. The Agent tab's pages are console-screenshots-agent.test.ts's.
 */
const SERVER = `require('node:http').createServer((req, res) => {
  if (req.url === '/missing') { res.statusCode = 404; return res.end('no'); }
  console.log('served ' + req.url);
  res.end('hello');
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('shop listening'));
`;

let stand: CodeDeployStand;
let deploymentId: string;
let revisionId: string;
let waitingId: string;
let workspaceName: string;

beforeAll(async () => {
  prepareScreenshots();
  stand = await startCodeDeployStand();
  stand.commit('shop', nodeApp('shop', SERVER, { graphConfig: false }));
  ({ deploymentId, revisionId } = await stand.deploy('shop', {
    secrets: { STRIPE_KEY: 'sk-screenshot-not-shown' },
    resourceSpec: { memory_mb: 256, min_scale: 1, max_scale: 1 },
  }));
  const listenerId = await createListener(stand.api, 'eu-cluster', ['agents']);
  waitingId = (await createImageDeployment(stand.api, 'support-agent', listenerId)).id;
  const hook = await stand.http.post('/v2/webhooks', {
    url: 'https://hooks.example.com/slipway',
    event_types: ['deployment.created', 'deployment.status_changed'],
  });
  expect(hook.status, hook.text).toBe(201);
  workspaceName = (await stand.http.get('/v2/workspaces')).body.resources[0].name;
  const revision = await stand.untilDone(deploymentId, revisionId);
  expect(revision.status, revision.status_message).toBe('DEPLOYED');
  const url = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body.url as string;
  for (const p of ['/', '/cart', '/checkout', '/missing']) expect((await fetch(`${url}${p}`)).status).toBeLessThan(500);
}, 300_000);

afterAll(async () => {
  await closeBrowser();
  await stand?.close();
});

/**
 * The ink of a uPlot chart's y-axis gutter (its labels, left of the plot): how many drawn pixels
 * are light and how many dark. A canvas keeps no styles to ask about, so its pixels are read.
 */
function axisInk(chart: Locator): Promise<{ light: number; dark: number }> {
  return chart.locator('canvas').evaluate((canvas: any) => {
    const { data } = canvas.getContext('2d').getImageData(0, 0, 50, canvas.height);
    let light = 0;
    let dark = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] < 200) continue;
      if ((data[i] + data[i + 1] + data[i + 2]) / 3 > 128) light++;
      else dark++;
    }
    return { light, dark };
  });
}

/** The page's checks (visitAndAudit), before its picture. */
const visit = (page: Page, hash: string, heading: string, ready: (page: Page) => Promise<unknown>) =>
  visitAndAudit(page, stand.apiUrl, hash, heading, ready);

describe.runIf(hasChromium || browserRequired)('every page of the console, in both themes', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  for (const theme of ['light', 'dark'] as const) {
    it(`renders, passes axe and is photographed in the ${theme} theme`, async () => {
      // Only to inject axe does the page bypass the console's policy.
      const w = await openConsolePage({ colorScheme: theme, bypassCSP: true, viewport: { width: 1280, height: 860 } });
      const { page } = w;
      try {
        await page.goto(`${stand.apiUrl}/console/`);
        await page.getByRole('heading', { name: 'Slipway console', level: 1 }).waitFor();
        expect(await page.evaluate('document.documentElement.dataset.theme')).toBe(theme);
        expect(await axeViolations(page)).toEqual([]);
        await shoot(page, 'sign-in', theme);
        await signInAt(page, `${stand.apiUrl}/console/`, stand.api.adminKey);
        // The sidebar names the workspace (not its id) and marks where you are.
        const shell = page.getByRole('banner');
        await shell.getByText(workspaceName, { exact: true }).waitFor();
        const nav = page.getByRole('navigation', { name: 'Main' });
        expect(await nav.getByRole('link', { name: 'Deployments' }).getAttribute('aria-current')).toBe('page');
        expect(await nav.locator('[aria-current="page"]').count()).toBe(1);

        await visit(page, '/', 'Deployments', async (p) => {
          const row = p.locator(`tr[data-deployment-id="${deploymentId}"]`);
          await row.getByText('DEPLOYED').first().waitFor();
          // The source in words, not the API's identifier.
          await row.getByText('Repository').waitFor();
          await p.locator(`tr[data-deployment-id="${waitingId}"]`).waitFor();
        });
        await shoot(page, 'deployments', theme);

        await visit(page, `/deployments/${deploymentId}`, 'shop', async (p) => {
          await p.getByRole('list', { name: 'Revision timeline, newest first' }).waitFor();
          await p.getByText('STRIPE_KEY').first().waitFor();
          expect(await p.getByText('sk-screenshot-not-shown').count()).toBe(0);
          // The configuration in words: the API's field names and booleans are not shown raw.
          const config = p.locator('dl.config').first();
          await config.locator('dt', { hasText: /^Commit message$/ }).waitFor();
          expect(await config.locator('dt', { hasText: /_/ }).count()).toBe(0);
          expect(
            await config
              .locator('div', { has: p.locator('dt', { hasText: /^Build on push$/ }) })
              .locator('dd')
              .innerText(),
          ).toBe('No');
        });
        await shoot(page, 'deployment', theme);

        // The revisions: a timeline with why each exists, and the chart of their phases.
        const timeline = page.getByRole('list', { name: 'Revision timeline, newest first' });
        await timeline.getByText('DEPLOYED').first().waitFor();
        await page.getByRole('img', { name: /^Phase durations of 1 revisions/ }).waitFor();
        await timeline.scrollIntoViewIfNeeded();
        await shoot(page, 'revisions', theme);

        // Health and metrics: the serving status and uPlot's charts, photographed on their own.
        const panel = page.getByRole('region', { name: 'Health and metrics' });
        await panel
          .getByRole('status', { name: 'Serving status' })
          .filter({ hasText: 'Serving: 1 of 1 instance up' })
          .waitFor({ timeout: 30_000 });
        // The four requests sent in beforeAll (probes not counted), once their minute is written.
        await panel.locator('[data-metric="requests"]').filter({ hasText: /^4$/ }).waitFor({ timeout: 60_000 });
        await panel.getByRole('img', { name: 'Requests chart' }).locator('canvas').waitFor({ timeout: 30_000 });
        await panel.scrollIntoViewIfNeeded();
        expect(await axeViolations(page)).toEqual([]);
        await shoot(page, 'metrics', theme);
        // The axes are drawn in the theme's colours (light ink on the dark page, dark on the light),
        // and drawn again when the theme is switched.
        const requestsChart = panel.getByRole('img', { name: 'Requests chart' });
        const ink = await axisInk(requestsChart);
        const toggle = page.getByRole('banner').locator('button.theme-toggle');
        const other = theme === 'dark' ? 'light' : 'dark';
        const readable = (drawn: { light: number; dark: number }, on: Theme) =>
          on === 'dark' ? drawn.light > drawn.dark : drawn.dark > drawn.light;
        expect(readable(ink, theme), JSON.stringify(ink)).toBe(true);
        await toggle.click();
        await expect.poll(async () => readable(await axisInk(requestsChart), other), { timeout: 5_000 }).toBe(true);
        await toggle.click();
        await expect.poll(async () => readable(await axisInk(requestsChart), theme), { timeout: 5_000 }).toBe(true);

        await visit(
          page,
          `/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy`,
          `Logs of revision ${revisionId.slice(0, 8)}`,
          (p) => p.getByRole('log', { name: 'deploy log' }).getByText('shop listening').waitFor({ timeout: 30_000 }),
        );
        await shoot(page, 'logs', theme);

        await visit(page, `/deployments/${deploymentId}?tab=logs`, 'shop', (p) =>
          p
            .getByRole('log', { name: 'Deployment log' })
            .getByText('shop listening')
            .first()
            .waitFor({ timeout: 30_000 }),
        );
        await shoot(page, 'deployment-logs', theme);

        await visit(page, `/deployments/${deploymentId}?tab=traces`, 'shop', (p) =>
          p
            .getByRole('navigation', { name: 'Deployment views' })
            .getByRole('link', { name: 'Traces' })
            .and(p.locator('[aria-current="page"]'))
            .waitFor(),
        );
        await shoot(page, 'traces', theme);

        await visit(page, '/deployments/new', 'Create a deployment', (p) =>
          p.getByRole('button', { name: 'Create deployment' }).waitFor(),
        );
        await shoot(page, 'create', theme);

        await visit(page, '/listeners', 'Listeners and integrations', async (p) => {
          await p.getByText('eu-cluster').first().waitFor();
          await p.getByText('acme').first().waitFor();
        });
        await shoot(page, 'listeners', theme);
        expect(await nav.locator('[aria-current="page"]').innerText()).toBe('Listeners and integrations');

        await visit(page, '/api-keys', 'API keys', (p) => p.locator('main li.card[data-key-id]').first().waitFor());
        await shoot(page, 'api-keys', theme);

        // A destructive action asks first: the action in danger's colours, Cancel a ghost beside it.
        await page.getByRole('button', { name: /^Revoke key / }).click();
        const confirm = page.getByRole('dialog', { name: 'Revoke key?' });
        await confirm.waitFor();
        const background = (name: string) =>
          confirm
            .getByRole('button', { name, exact: true })
            .evaluate((b: any) => (globalThis as any).getComputedStyle(b).backgroundColor as string);
        expect(await background('Cancel')).toBe('rgba(0, 0, 0, 0)');
        expect(await background('Revoke key')).not.toBe('rgba(0, 0, 0, 0)');
        expect(await axeViolations(page)).toEqual([]);
        await shoot(page, 'confirm', theme);
        await confirm.getByRole('button', { name: 'Cancel' }).click();
        await confirm.waitFor({ state: 'hidden' });
        expect(await page.locator('main li.card[data-key-id]').count()).toBeGreaterThan(0);

        await visit(page, '/webhooks', 'Webhooks', (p) =>
          p.getByText('https://hooks.example.com/slipway').first().waitFor(),
        );
        await shoot(page, 'webhooks', theme);

        await visit(page, '/events', 'Events', (p) => p.getByRole('link', { name: 'shop' }).first().waitFor());
        await shoot(page, 'events', theme);

        await visit(page, '/workspace', 'Tags and quotas', (p) =>
          p.getByRole('heading', { name: 'Quotas', exact: true }).waitFor(),
        );
        await shoot(page, 'workspace', theme);

        // A phone's width: the list as cards, the shell folded, nothing scrolls sideways.
        await page.setViewportSize({ width: 375, height: 760 });
        await visit(page, '/', 'Deployments', (p) => p.locator(`tr[data-deployment-id="${deploymentId}"]`).waitFor());
        await expectFitsAfterResize(page, 375);
        await shoot(page, 'mobile', theme);
        expect(w.errors).toEqual([]);
      } finally {
        await w.close();
      }
    }, 180_000);
  }
});
