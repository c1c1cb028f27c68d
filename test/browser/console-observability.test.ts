import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { closeBrowser, expectFitsAfterResize, openConsolePage, signInAt } from '../support/console-page.js';

/**
 * A running deployment in the console, through the real api, builder and deployer processes and
 * the sandboxed process runtime: its logs page follows what the instance prints after the
 * rollout (within 2 s), pauses and resumes, filters by instance; its page says whether it serves
 * and draws uPlot charts whose Requests line adds up to the requests this test sent.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

const SERVER = `const http = require('node:http');
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/ok') return res.end('ok');
  if (url.pathname === '/print') { console.log('printed ' + url.searchParams.get('m')); return res.end('printed'); }
  if (url.pathname === '/missing') { res.statusCode = 404; return res.end('no'); }
  res.end('hello');
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('watched app listening'));
`;

let stand: CodeDeployStand;
let deploymentId: string;
let revisionId: string;
let url: string;
/** Every request this file sends to the serving URL: the console's total must equal it. */
let sent = 0;
const hit = (p: string) => {
  sent += 1;
  return fetch(`${url}${p}`);
};

beforeAll(async () => {
  mkdirSync(OUTPUT, { recursive: true });
  stand = await startCodeDeployStand();
  stand.commit('watched', nodeApp('watched', SERVER));
  ({ deploymentId, revisionId } = await stand.deploy('watched', {
    resourceSpec: { memory_mb: 256, min_scale: 1, max_scale: 1 },
  }));
  const revision = await stand.untilDone(deploymentId, revisionId);
  expect(revision.status, revision.status_message).toBe('DEPLOYED');
  url = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body.url;
}, 300_000);

afterAll(async () => {
  await closeBrowser();
  await stand?.close();
});

describe.runIf(hasChromium || browserRequired)('a running deployment in the console', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('follows a line the running app prints within 2 s; pauses, resumes and filters by instance', async () => {
    const w = await openConsolePage();
    try {
      await signInAt(
        w.page,
        `${stand.apiUrl}/console/#/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy`,
        stand.api.adminKey,
        `Logs of revision ${revisionId.slice(0, 8)}`,
      );
      const log = w.page.getByRole('log', { name: 'deploy log' });
      await log.getByText('watched app listening').waitFor({ timeout: 30_000 });
      await w.page.getByText('live', { exact: false }).first().waitFor();

      const first = `first-${Date.now()}`;
      expect((await hit(`/print?m=${first}`)).status).toBe(200);
      await log.getByText(`printed ${first}`).waitFor({ timeout: 2_000 });
      expect(await log.locator('li', { hasText: `printed ${first}` }).innerText()).toContain('[0]');

      await w.page.getByRole('button', { name: 'Pause' }).click();
      const held = `held-${Date.now()}`;
      expect((await hit(`/print?m=${held}`)).status).toBe(200);
      await w.page.getByRole('button', { name: 'Resume (1 new line)' }).waitFor({ timeout: 5_000 });
      expect(await log.getByText(`printed ${held}`).count()).toBe(0);
      await w.page.getByRole('button', { name: /^Resume/ }).click();
      await log.getByText(`printed ${held}`).waitFor();
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-app-logs.png'), fullPage: true });

      // The rollout's own lines have no instance: filtering by instance 0 leaves the app's.
      await w.page.getByLabel('Instance').selectOption('0');
      await log.getByText(`printed ${first}`).waitFor();
      for (const text of await log.locator('li').allInnerTexts()) expect(text).toContain('[0]');
      await w.page.getByLabel('Instance').selectOption('none');
      await log.getByText(`printed ${first}`).waitFor({ state: 'detached' });
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('shows that it serves and charts the requests it served: the total equals the requests sent', async () => {
    for (let i = 0; i < 9; i++) expect((await hit('/')).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await hit('/missing')).status).toBe(404);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${stand.apiUrl}/console/#/deployments/${deploymentId}`, stand.api.adminKey, 'watched');
      const panel = w.page.getByRole('region', { name: 'Health and metrics' });
      await panel
        .getByRole('status', { name: 'Serving status' })
        .filter({ hasText: 'Serving: 1 of 1 instance up' })
        .waitFor({ timeout: 30_000 });
      // Buckets are written once over; the panel re-reads every 10 s.
      // (Waited for through a locator: the console's policy forbids evaluating strings in the page.)
      const total = panel.locator('[data-metric="requests"]');
      await total.filter({ hasText: new RegExp(`^${sent}$`) }).waitFor({ timeout: 60_000 });
      expect(await total.innerText()).toBe(String(sent));
      expect(await panel.locator('[data-metric="errors_4xx"]').innerText()).toBe('2');
      // uPlot drew each chart on a canvas, with its legend.
      for (const title of ['Requests', 'Latency', 'CPU', 'Memory', 'Restarts']) {
        await panel
          .getByRole('img', { name: `${title} chart` })
          .locator('canvas')
          .waitFor();
      }
      // The Requests chart's line, summed as uPlot holds it, is the requests sent: what it drew.
      const requestsChart = panel.getByRole('figure', { name: 'Requests', exact: true });
      await requestsChart.and(w.page.locator(`[data-total="${sent}"]`)).waitFor({ timeout: 15_000 });
      expect(Number(await requestsChart.getAttribute('data-total'))).toBe(sent);
      await panel.getByRole('radio', { name: 'Last 24 hours' }).check();
      await panel.getByLabel('Totals over 24h').waitFor({ timeout: 30_000 });
      await total.filter({ hasText: new RegExp(`^${sent}$`) }).waitFor({ timeout: 30_000 });
      // Wider steps, the same requests: the 24 h chart's points add up to them too.
      await requestsChart.and(w.page.locator(`[data-total="${sent}"]`)).waitFor({ timeout: 5_000 });
      await panel.getByRole('radio', { name: 'Last hour' }).check();
      // The screenshot shows the hour's charts, not the 24 h ones drawn until the hour's numbers arrive.
      await panel.getByLabel('Totals over 1h').waitFor({ timeout: 30_000 });
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-metrics.png'), fullPage: true });

      // Narrowed to a phone's width, the page with its charts never scrolls sideways, and each
      // chart redraws to the narrow column (not only clipped to it).
      await w.page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(w.page, 375);
      for (const title of ['Requests', 'Latency', 'CPU', 'Memory', 'Restarts']) {
        const canvas = panel.getByRole('img', { name: `${title} chart` }).locator('canvas');
        const rightEdge = async () => {
          const box = (await canvas.boundingBox())!;
          return box.x + box.width;
        };
        await expect.poll(rightEdge, { timeout: 2_000 }).toBeLessThanOrEqual(375);
      }
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 120_000);

  it('says in one line why the latest revision failed, links to its error lines, and shows what differs from the serving one', async () => {
    // A new commit whose server exits at once: its rollout fails, the first revision keeps serving.
    stand.commit('watched', { 'server.js': `console.error('boom: missing CONFIG_PATH'); process.exit(3);\n` });
    const patched = await stand.http.patch(`/v2/deployments/${deploymentId}`, {
      source_revision_config: { repo_ref: 'main' },
    });
    expect(patched.status, patched.text).toBe(200);
    const failedId: string = patched.body.latest_revision_id;
    const failed = await stand.untilDone(deploymentId, failedId);
    expect(failed.status).toBe('DEPLOY_FAILED');
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${stand.apiUrl}/console/#/deployments/${deploymentId}`, stand.api.adminKey, 'watched');
      const line = w.page.getByRole('alert', { name: 'Latest revision failed' });
      await line.waitFor({ timeout: 15_000 });
      const text = await line.innerText();
      expect(text).toContain(
        `Revision ${failedId.slice(0, 8)} deploy failed: ${failed.status_message.split('\n')[0].replace(/ Last log lines:$/, '')}`,
      );
      expect(text).toContain(`revision ${revisionId.slice(0, 8)} keeps serving`);
      // Only the commit differs between the serving revision and the failed one.
      const table = w.page.getByRole('table', { name: 'Active and latest revision' });
      expect(await table.locator('tr.differs th').allInnerTexts()).toEqual(['Commit']);
      await line.getByRole('link', { name: 'See the failing log lines' }).click();
      await w.page.getByRole('heading', { name: `Logs of revision ${failedId.slice(0, 8)}` }).waitFor();
      const log = w.page.getByRole('log', { name: 'deploy log' });
      await log.getByText('boom: missing CONFIG_PATH').waitFor({ timeout: 15_000 });
      expect(await w.page.getByLabel('Level').inputValue()).toBe('error');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 300_000);
});
