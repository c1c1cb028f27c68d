import { mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import {
  axeViolations,
  agentApplies,
  closeBrowser,
  expectFitsAfterResize,
  openConsolePage,
  signInAt,
} from '../support/console-page.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { dottedSegment, langsmithClient, sendTrace } from '../support/langsmith.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A deployment's Traces tab in Chromium: the list, its filters (in the address), one trace's run
 * tree and run details, and its revisions compared. Real: the api serving the console, its
 * database, the deployer, the official `langsmith` client and `POST /api/v1/runs/batch` writing
 * the runs. Stands in: the listener agent (it would run in a customer's cluster), played by the
 * test so one revision becomes the active one. Screenshots go to test/browser/output/.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

let api: TestApi;
let deployer: ServiceProcess;
let listenerId: string;
let deployment: { id: string; name: string };
/** The revision serving (the agent applied it), and an earlier one the older traces name. */
let active: string;
const earlier = randomUUID();
const traces = {} as Record<'oldFirst' | 'oldSecond' | 'activeOk' | 'failed', string>;
/** The failed trace's runs: a root chain, a chain under it, and an llm call under that. */
const tree = { root: randomUUID(), plan: randomUUID(), model: randomUUID() };
const ERROR_TEXT = 'ToolError: the "lookup" tool timed out';
/** A metadata value with quotes and a backslash, which the filter must escape. */
const TRICKY = 'acme "west" \\ branch';

/** The failed trace, written as one batch (the client's fallback): the error on the root, tokens on the llm. */
async function sendFailedTrace(projectName: string, at: Date): Promise<void> {
  const order = (parentOrder: string | null, ms: number, id: string) =>
    `${parentOrder ? `${parentOrder}.` : ''}${dottedSegment(new Date(at.getTime() + ms), id)}`;
  const rootOrder = order(null, 0, tree.root);
  const planOrder = order(rootOrder, 100, tree.plan);
  const time = (ms: number) => new Date(at.getTime() + ms).toISOString();
  const common = { trace_id: tree.root, session_name: projectName };
  const res = await api.http.post('/api/v1/runs/batch', {
    post: [
      {
        ...common,
        id: tree.root,
        dotted_order: rootOrder,
        name: 'failing-agent',
        run_type: 'chain',
        start_time: time(0),
        end_time: time(1_000),
        inputs: { question: 'where is my order?' },
        error: ERROR_TEXT,
        extra: { metadata: { revision_id: active, thread_id: 'thread-failed', customer: 'globex' } },
      },
      {
        ...common,
        id: tree.plan,
        parent_run_id: tree.root,
        dotted_order: planOrder,
        name: 'plan',
        run_type: 'chain',
        start_time: time(100),
        end_time: time(900),
        inputs: {},
        outputs: { step: 'lookup' },
      },
      {
        ...common,
        id: tree.model,
        parent_run_id: tree.plan,
        dotted_order: order(planOrder, 200, tree.model),
        name: 'model',
        run_type: 'llm',
        start_time: time(200),
        end_time: time(700),
        inputs: { messages: [{ role: 'user', content: 'where is my order?' }] },
        outputs: { usage_metadata: { input_tokens: 120, output_tokens: 30, total_tokens: 150 } },
      },
    ],
  });
  expect(res.status, res.text).toBe(202);
}

beforeAll(async () => {
  mkdirSync(OUTPUT, { recursive: true });
  api = await startTestApi();
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api));
  listenerId = await createListener(api, `console-traces-${randomUUID()}`, ['agents']);
  const agent = api.http.as(await api.mintKey({ listenerId }));
  const created = await createImageDeployment(api, `traced-agent-${randomUUID().slice(0, 8)}`, listenerId);
  active = created.latest_revision_id;
  await agentApplies(agent, listenerId, active);
  deployment = await eventually(
    async () =>
      (await api.http.get(`/v2/deployments/${created.id}`)).body as {
        id: string;
        name: string;
        active_revision_id: string | null;
      },
    (d) => d.active_revision_id === active,
  );

  const client = langsmithClient(api.baseUrl, api.adminKey);
  const now = Date.now();
  const at = (secondsAgo: number) => new Date(now - secondsAgo * 1_000);
  traces.oldFirst = (
    await sendTrace(client, deployment.name, {
      start: at(50),
      latencyMs: 1_500,
      name: 'old-answer',
      metadata: { revision_id: earlier, thread_id: 'thread-1', customer: TRICKY },
    })
  ).traceId;
  traces.oldSecond = (
    await sendTrace(client, deployment.name, {
      start: at(40),
      latencyMs: 3_000,
      name: 'slow-answer',
      metadata: { revision_id: earlier, thread_id: 'thread-1', customer: 'acme' },
    })
  ).traceId;
  traces.activeOk = (
    await sendTrace(client, deployment.name, {
      start: at(30),
      latencyMs: 500,
      name: 'new-answer',
      metadata: { revision_id: active, thread_id: 'thread-2', customer: 'acme' },
    })
  ).traceId;
  await sendFailedTrace(deployment.name, at(20));
  traces.failed = tree.root;
}, 120_000);

afterAll(async () => {
  await closeBrowser();
  await deployer?.stop();
  await api?.close();
});

const tracesUrl = () => `${api.baseUrl}/console/#/deployments/${deployment.id}?tab=traces`;
/** The trace ids the list shows, top to bottom. */
const listed = (page: Page) =>
  page.locator('tr[data-trace-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-trace-id')));

/** Applies the filter form as a person would: each field set, then the button. */
async function applyFilters(
  page: Page,
  fields: { status?: string; key?: string; value?: string; latency?: string },
): Promise<void> {
  await page.getByLabel('Trace status').selectOption(fields.status ?? '');
  await page.getByLabel('Metadata key').fill(fields.key ?? '');
  await page.getByLabel('Metadata value').fill(fields.value ?? '');
  await page.getByLabel('Minimum latency (s)').fill(fields.latency ?? '');
  await page.getByRole('button', { name: 'Apply filters' }).click();
}

/** Waits until the list shows exactly `ids`, in that order. */
async function expectListed(page: Page, ids: string[]): Promise<void> {
  await expect.poll(() => listed(page), { timeout: 10_000 }).toEqual(ids);
}

describe.runIf(hasChromium || browserRequired)('a deployment’s Traces tab in Chromium', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('lists the traces newest first, narrows them by status and metadata, opens a trace’s tree and compares revisions', async () => {
    const w = await openConsolePage();
    const { page } = w;
    try {
      await signInAt(page, `${api.baseUrl}/console/#/deployments/${deployment.id}`, api.adminKey, deployment.name);
      await page.getByRole('navigation', { name: 'Deployment views' }).getByRole('link', { name: 'Traces' }).click();
      await page.getByRole('heading', { name: 'Traces', level: 2 }).waitFor();
      const all = [traces.failed, traces.activeOk, traces.oldSecond, traces.oldFirst];
      await expectListed(page, all);
      const failedRow = page.locator(`tr[data-trace-id="${traces.failed}"]`);
      expect(await failedRow.innerText()).toMatch(/error\s+failing-agent\s+1\.00 s\s+150\s+thread-f\s+/);
      expect(await failedRow.innerText()).toContain(active.slice(0, 8));
      // The tab is in the address: a reload stays on it.
      expect(new URL(page.url()).hash).toBe(`#/deployments/${deployment.id}?tab=traces`);
      await page.reload();
      await expectListed(page, all);

      await applyFilters(page, { status: 'error' });
      await expectListed(page, [traces.failed]);
      expect(Object.fromEntries(new URLSearchParams(new URL(page.url()).hash.split('?')[1]))).toEqual({
        tab: 'traces',
        status: 'error',
      });
      await applyFilters(page, { key: 'customer', value: 'acme' });
      await expectListed(page, [traces.activeOk, traces.oldSecond]);
      // Quotes and a backslash in a value reach the filter escaped, and match that value only.
      await applyFilters(page, { key: 'customer', value: TRICKY });
      await expectListed(page, [traces.oldFirst]);
      await applyFilters(page, { latency: '2' });
      await expectListed(page, [traces.oldSecond]);
      await applyFilters(page, { status: 'success', key: 'customer', value: 'globex' });
      const none = page.getByRole('region', { name: 'No traces match these filters' });
      await none.waitFor();
      await none.getByRole('link', { name: 'Show every trace' }).click();
      await expectListed(page, all);

      // The revisions compared: both, with their counts; the serving one marked.
      const compare = page.getByRole('table', { name: 'Traces per revision, newest first' });
      const revisionRow = (id: string) => compare.locator(`tr[data-revision-id="${id}"]`);
      await revisionRow(active).waitFor();
      expect(await revisionRow(active).locator('[data-field="traces"]').innerText()).toBe('2');
      expect(await revisionRow(active).locator('[data-field="error_rate"]').innerText()).toBe('50 %');
      expect(await revisionRow(active).getByRole('rowheader').innerText()).toContain('active');
      expect(await revisionRow(earlier).locator('[data-field="traces"]').innerText()).toBe('2');
      expect(await revisionRow(earlier).locator('[data-field="error_rate"]').innerText()).toBe('0 %');
      expect(await revisionRow(earlier).getByRole('rowheader').innerText()).not.toContain('active');
      await page.getByRole('radio', { name: 'Last 24 hours' }).check();
      await revisionRow(earlier).waitFor();
      await page.screenshot({ path: path.join(OUTPUT, 'console-traces.png'), fullPage: true });

      // One trace: its tree in order, indented by depth, the root's error shown first.
      await failedRow.getByRole('link', { name: 'failing-agent' }).click();
      const waterfall = page.getByRole('list', { name: 'Runs of this trace, in tree order' });
      await waterfall.waitFor();
      const runs = waterfall.locator('li');
      expect(
        await runs.evaluateAll((items) =>
          items.map((li) => [li.getAttribute('data-run-id'), li.getAttribute('data-depth')]),
        ),
      ).toEqual([
        [tree.root, '0'],
        [tree.plan, '1'],
        [tree.model, '2'],
      ]);
      expect(await runs.nth(0).innerText()).toMatch(/failing-agent\s+chain\s+error/);
      expect(await runs.nth(2).innerText()).toMatch(/model\s+llm\s+success/);
      expect(await page.getByRole('region', { name: 'Error', exact: true }).innerText()).toBe(ERROR_TEXT);
      const details = page.getByRole('region', { name: /^Run failing-agent/ });
      expect(await details.innerText()).toContain('thread-failed');
      expect(await details.getByRole('region', { name: 'Inputs', exact: true }).innerText()).toContain(
        '"question": "where is my order?"',
      );

      await runs.nth(2).getByRole('link').click();
      const model = page.getByRole('region', { name: /^Run model/ });
      await model.waitFor();
      const facts = Object.fromEntries(
        await model
          .locator('dl > div')
          .evaluateAll((divs) =>
            divs.map((d) => [d.querySelector('dt')!.textContent, d.querySelector('dd')!.textContent]),
          ),
      );
      expect(facts).toMatchObject({
        Type: 'llm',
        'Prompt tokens': '120',
        'Completion tokens': '30',
        'Total tokens': '150',
        Duration: '0.50 s',
      });
      expect(await model.getByRole('region', { name: 'Error', exact: true }).count()).toBe(0);
      // The selected run is in the address too.
      expect(new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('run')).toBe(tree.model);
      await page.screenshot({ path: path.join(OUTPUT, 'console-trace.png'), fullPage: true });
      await page.getByRole('link', { name: 'Back to the traces' }).click();
      await expectListed(page, all);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('pages through more traces than a page holds, with and without filters', async () => {
    const busy = await createImageDeployment(api, `busy-agent-${randomUUID().slice(0, 8)}`, listenerId);
    const name = (await api.http.get(`/v2/deployments/${busy.id}`)).body.name as string;
    // 21 traces, one root run each, a second apart: one more than the console's page of 20.
    const now = Date.now();
    const roots = Array.from({ length: 21 }, (_, i) => {
      const id = randomUUID();
      const at = new Date(now - (i + 1) * 1_000);
      return {
        id,
        trace_id: id,
        dotted_order: dottedSegment(at, id),
        name: `call-${i}`,
        run_type: 'chain',
        start_time: at.toISOString(),
        end_time: new Date(at.getTime() + 100).toISOString(),
        session_name: name,
      };
    });
    expect((await api.http.post('/api/v1/runs/batch', { post: roots })).status).toBe(202);
    const w = await openConsolePage();
    const { page } = w;
    try {
      await signInAt(page, `${api.baseUrl}/console/#/deployments/${busy.id}?tab=traces`, api.adminKey, name);
      // Unfiltered, the deployment's trace list pages by offset; filtered, the runs query by cursor.
      for (const status of ['', 'success']) {
        await applyFilters(page, { status });
        await expectListed(
          page,
          roots.slice(0, 20).map((r) => r.id),
        );
        await page.getByRole('button', { name: 'Load more' }).click();
        await expectListed(
          page,
          roots.map((r) => r.id),
        );
        expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
      }
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('passes an axe audit in dark mode and fits a 375 px screen, list and trace', async () => {
    // Only to inject axe does this page bypass the console's policy (the test above runs under it).
    const w = await openConsolePage({ colorScheme: 'dark', bypassCSP: true });
    const { page } = w;
    try {
      await signInAt(page, tracesUrl(), api.adminKey, deployment.name);
      await page.locator('tr[data-trace-id]').first().waitFor();
      await page.getByRole('table', { name: 'Traces per revision, newest first' }).waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(page, 375);

      await page.goto(`${tracesUrl()}&trace=${traces.failed}&run=${tree.model}`);
      await page.getByRole('region', { name: /^Run model/ }).waitFor();
      await expectFitsAfterResize(page, 375);
      await page.screenshot({ path: path.join(OUTPUT, 'console-trace-mobile-dark.png'), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 900 });
      expect(await axeViolations(page)).toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});
