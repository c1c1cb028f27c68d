import { randomUUID } from 'node:crypto';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RevisionLogRepository } from '@slipway/pipeline';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import {
  axeViolations,
  closeBrowser,
  expectFitsAfterResize,
  openConsolePage,
  signInAt,
} from '../support/console-page.js';
import { eventually } from '../support/service-process.js';

/**
 * A deployment's log across its revisions, in the console (its Logs view, opened from the
 * overview): the serving instance's output and the build of a newer revision, interleaved by
 * time and marked with their revisions, followed live through a dropped stream, and bounded.
 * Built and served by the real api, builder and deployer; the API is read after to check it.
 */
let stand: CodeDeployStand;
let deploymentId = '';
let firstRevision = '';
const TOKEN = randomUUID().slice(0, 8);

/** Prints a line at start, one a second, and `n` lines on `/burst?n=`. */
const SERVER = `const http = require('node:http');
console.log('serving ${TOKEN}');
let tick = 0;
setInterval(() => console.log('tick ' + ++tick + ' ${TOKEN}'), 1000);
http.createServer((req, res) => {
  const n = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? 0);
  for (let i = 1; i <= n; i++) console.log('burst ' + i + ' ${TOKEN}');
  res.end('ok');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/** What the view shows of each line: its revision, log, instance and text. */
function shownLines(log: Locator) {
  return log.locator('li').evaluateAll((items) =>
    items.map((li) => ({
      revision: li.getAttribute('data-revision-id') ?? '',
      type: li.getAttribute('data-type') ?? '',
      time: li.querySelector('time')?.getAttribute('datetime') ?? '',
      mark: li.querySelector('.log-revision')?.textContent ?? '',
      instance: li.querySelector('.instance')?.textContent?.trim() ?? '',
      text: li.querySelector('.text')?.textContent ?? '',
    })),
  );
}

/** The index of the first line shown whose text contains `text`, once there is one. */
async function lineIndex(log: Locator, text: string, timeout = 60_000): Promise<number> {
  const found = await eventually(
    async () => (await shownLines(log)).findIndex((l) => l.text.includes(text)),
    (i) => i >= 0,
    timeout,
    200,
  );
  return found;
}

async function openLogsView(page: Page): Promise<Locator> {
  await signInAt(page, `${stand.apiUrl}/console/`, stand.api.adminKey);
  await page.getByRole('link', { name: 'tail-app', exact: true }).click();
  await page.getByRole('heading', { name: 'tail-app', level: 1 }).waitFor();
  await page.getByRole('region', { name: 'Overview' }).getByRole('link', { name: 'Logs', exact: true }).click();
  const log = page.getByRole('log', { name: 'Deployment log' });
  await log.waitFor().catch(async (err) => {
    throw new Error(`${err.message}\nThe page shows: ${(await page.locator('body').innerText()).slice(0, 1000)}`);
  });
  expect(
    await page
      .getByRole('navigation', { name: 'Deployment views' })
      .getByRole('link', { name: 'Logs' })
      .getAttribute('aria-current'),
  ).toBe('page');
  return log;
}

beforeAll(async () => {
  stand = await startCodeDeployStand();
  stand.commit('tail-app', nodeApp('tail-app', SERVER, { graphConfig: false }));
  ({ deploymentId, revisionId: firstRevision } = await stand.deploy('tail-app'));
  const revision = await stand.untilDone(deploymentId, firstRevision);
  expect(revision.status, revision.status_message).toBe('DEPLOYED');
}, 300_000);

afterAll(async () => {
  await closeBrowser();
  await stand?.close();
});

describe.runIf(hasChromium || browserRequired)("a deployment's log across its revisions", () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it("shows the serving instance's lines, then a new revision's build line, each marked with its revision, live", async () => {
    // Only to inject axe (WCAG checks of the marked lines) does this page bypass the policy.
    const w = await openConsolePage({ bypassCSP: true });
    const { page } = w;
    try {
      // The view's first stream is cut: it says so, reconnects and then follows.
      await page.route(
        (url) => url.pathname === '/v2/deployment-logs' && url.searchParams.get('follow') === 'true',
        (route) => route.abort('connectionreset'),
        { times: 1 },
      );
      const log = await openLogsView(page);
      await page.getByRole('alert').filter({ hasText: 'The log stream was cut off: reconnecting' }).waitFor();
      const serving = await lineIndex(log, `serving ${TOKEN}`);
      const first = (await shownLines(log))[serving]!;
      expect(first).toMatchObject({
        revision: firstRevision,
        type: 'deploy',
        mark: `${firstRevision.slice(0, 8)} deploy`,
        instance: '[0]',
      });
      await page.locator('.live[data-mode="live"]').waitFor({ timeout: 15_000 });
      expect(await page.getByRole('alert').count()).toBe(0);
      // Lines printed after the view opened come through the (reconnected) stream.
      const before = (await shownLines(log)).length;
      await eventually(
        async () => (await shownLines(log)).slice(before).some((l) => /^tick \d+ /.test(l.text)),
        Boolean,
        15_000,
        200,
      );

      // A page that reloaded would lose this.
      await page.evaluate('window.sameDocument = true');
      const built = randomUUID().slice(0, 8);
      // The next commit's build prints a line of its own.
      stand.commit('tail-app', {
        ...nodeApp('tail-app', SERVER, { graphConfig: false }),
        'package.json': JSON.stringify({
          name: 'tail-app',
          version: '1.0.0',
          private: true,
          scripts: { start: 'node server.js', build: `node -e "console.log('built', '${built}')"` },
        }),
      });
      const patched = await stand.http.patch(`/v2/deployments/${deploymentId}`, {
        source_revision_config: { repo_ref: 'main' },
      });
      expect(patched.status, patched.text).toBe(200);
      const secondRevision = patched.body.latest_revision_id as string;
      expect(secondRevision).not.toBe(firstRevision);

      const buildAt = await lineIndex(log, `built ${built}`, 120_000);
      const lines = await shownLines(log);
      expect(lines[buildAt]).toMatchObject({
        revision: secondRevision,
        type: 'build',
        mark: `${secondRevision.slice(0, 8)} build`,
        instance: '',
      });
      expect(lines.findIndex((l) => l.text === `serving ${TOKEN}`)).toBeLessThan(buildAt);
      // Interleaved by time: the serving instance's lines go on around the build's.
      const times = lines.map((l) => l.time);
      expect(times).toEqual([...times].sort());
      expect(lines.some((l, i) => i < buildAt && l.revision === secondRevision && l.type === 'build')).toBe(true);
      await eventually(
        async () => (await shownLines(log)).slice(buildAt).some((l) => l.revision === firstRevision),
        Boolean,
        15_000,
        200,
      );
      expect(await page.evaluate('window.sameDocument')).toBe(true);
      expect(await axeViolations(page)).toEqual([]);

      // Checked against the API: the same lines, of the same revisions and logs.
      const api = (await stand.http.get(`/v2/deployment-logs?deployment_id=${deploymentId}&query=${TOKEN}&limit=5`))
        .body.logs as Array<{ revision_id: string; type: string; instance?: number; message: string }>;
      expect(api[0]).toMatchObject({
        revision_id: firstRevision,
        type: 'deploy',
        instance: 0,
        message: `serving ${TOKEN}`,
      });
      const buildLines = (
        await stand.http.get(`/v2/deployment-logs?deployment_id=${deploymentId}&query=${built}&type=build`)
      ).body.logs as Array<{ revision_id: string; message: string }>;
      expect(buildLines.map((l) => l.revision_id)).toEqual(buildLines.map(() => secondRevision));
      expect(buildLines.map((l) => l.message)).toContain(`built ${built}`);

      // Once it serves, the new revision's instance prints, marked with it.
      const second = await stand.untilDone(deploymentId, secondRevision);
      expect(second.status, second.status_message).toBe('DEPLOYED');
      await eventually(
        async () =>
          (await shownLines(log)).some(
            (l) => l.revision === secondRevision && l.type === 'deploy' && l.text === `serving ${TOKEN}`,
          ),
        Boolean,
        30_000,
        200,
      );
      expect(await page.evaluate('window.sameDocument')).toBe(true);
      expect(w.errors.filter((e) => !/ERR_CONNECTION_RESET|Failed to fetch/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 400_000);

  it('shows a line whose insert committed after later lines were already streamed', async () => {
    const w = await openConsolePage();
    const runner = stand.api.dataSource.createQueryRunner();
    try {
      const log = await openLogsView(w.page);
      await w.page.locator('.live[data-mode="live"]').waitFor({ timeout: 15_000 });
      const { active_revision_id: serving } = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
      const late = `late line ${randomUUID().slice(0, 8)}`;
      // A writer whose insert is slow to commit: its line is stamped now, and visible only later.
      await runner.startTransaction();
      await new RevisionLogRepository(runner.manager).append(serving, 'deploy', [{ level: 'warn', message: late }]);
      const [{ created_at: stamped }] = await runner.query(`SELECT created_at FROM revision_logs WHERE message = $1`, [
        late,
      ]);
      const lateAt = (stamped as Date).toISOString();
      // Meanwhile the app's later ticks are committed and streamed: the stream's cursor passes the line.
      await eventually(
        async () => (await shownLines(log)).filter((l) => l.text.startsWith('tick ') && l.time > lateAt).length,
        (n) => n >= 2,
        15_000,
        200,
      );
      expect((await shownLines(log)).some((l) => l.text === late)).toBe(false);
      await runner.commitTransaction();
      const at = await lineIndex(log, late, 30_000);
      const lines = await shownLines(log);
      expect(lines[at]).toMatchObject({ revision: serving, type: 'deploy', text: late });
      // In its place by time, before the ticks that were streamed ahead of it.
      expect(lines.slice(at + 1).filter((l) => l.text.startsWith('tick ')).length).toBeGreaterThanOrEqual(2);
      expect(lines.filter((l) => l.text === late)).toHaveLength(1);
      expect(w.errors).toEqual([]);
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
      await w.close();
    }
  }, 120_000);

  it('keeps a bounded number of lines: a burst of 1,200 leaves the newest 1,000, and says so', async () => {
    const w = await openConsolePage();
    try {
      const log = await openLogsView(w.page);
      await w.page.locator('.live[data-mode="live"]').waitFor({ timeout: 15_000 });
      const { url } = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
      expect((await fetch(`${url}/burst?n=1200`)).status).toBe(200);
      await lineIndex(log, `burst 1200 ${TOKEN}`, 30_000);
      const lines = await shownLines(log);
      expect(lines.length).toBe(1_000);
      expect(lines.some((l) => l.text === `burst 1 ${TOKEN}`)).toBe(false);
      await w.page.getByText(/older lines? dropped from this page/).waitFor();
      // On a phone's width the marked lines wrap inside the log box: nothing scrolls sideways.
      await w.page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(w.page, 375);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 120_000);
});
