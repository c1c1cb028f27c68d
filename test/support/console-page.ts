import axe from 'axe-core';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from './browser.js';
import type { HttpClient } from './http.js';
import { eventually } from './service-process.js';

/** One Chromium per test file, started on first use. */
let browser: Browser | null = null;

export async function closeBrowser(): Promise<void> {
  await browser?.close();
  browser = null;
}

export interface ConsolePage {
  page: Page;
  /** Console errors and uncaught page errors. */
  errors: string[];
  close: () => Promise<void>;
}

/**
 * Chromium aborts requests in flight with ERR_NETWORK_CHANGED whenever an interface of the
 * machine comes or goes, and the sandbox suites running beside these tests add and remove a veth
 * per sandbox: the page's own request to localhost then fails through no fault of the console
 * (which retries it; the tests' assertions on what the page shows still hold). Not counted.
 */
const MACHINE_NOISE = /net::ERR_NETWORK_CHANGED/;

/** A fresh browser context (own storage) with a page that records errors. */
export async function openConsolePage(options: BrowserContextOptions = {}): Promise<ConsolePage> {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  return { page, errors: recordPageErrors(page), close: () => context.close() };
}

/** The page's console errors (less the machine's noise above) and uncaught errors, as they come. */
export function recordPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => m.type() === 'error' && !MACHINE_NOISE.test(m.text()) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

/** Signs in at `url` (the console, or a page that leads to it) and waits for the page's heading. */
export async function signInAt(page: Page, url: string, key: string, heading = 'Deployments'): Promise<void> {
  const res = await page.goto(url);
  expect(res?.status()).toBe(200);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

/** Whether the page fits its viewport's width (nothing scrolls sideways). */
export const pageWidth = (page: Page) => page.evaluate('document.documentElement.scrollWidth') as Promise<number>;

/**
 * The page fits `width` after its viewport was narrowed to it. What lays itself out in script
 * catches up a moment later (uPlot redraws its charts when their ResizeObserver runs, the frame
 * after the resize), so the width is polled for up to 2 s: an overflow still there by then is real.
 */
export async function expectFitsAfterResize(page: Page, width: number): Promise<void> {
  await expect.poll(() => pageWidth(page), { timeout: 2_000, interval: 100 }).toBeLessThanOrEqual(width);
}

/**
 * The listener agent's loop once, played by a test (the agent would run in a customer's
 * cluster): waits until the revision is in its desired state, then reports how the rollout went.
 */
export async function agentApplies(
  agent: HttpClient,
  listenerId: string,
  revisionId: string,
  status: 'DEPLOYED' | 'DEPLOY_FAILED' = 'DEPLOYED',
  message = 'rolled out',
) {
  await eventually(
    async () =>
      (await agent.get(`/v2/listeners/${listenerId}/desired-state`)).body.deployments as Array<{
        revision_id: string;
        action: string;
      }>,
    (entries) => entries.some((e) => e.revision_id === revisionId && e.action === 'apply'),
  );
  const report = await agent.post(`/v2/listeners/${listenerId}/reports`, {
    revisions: [{ revision_id: revisionId, status, message }],
  });
  expect(report.status).toBe(200);
  expect(report.body.rejected ?? []).toEqual([]);
}

/** The curl commands the page shows for the API calls its actions made (expanding each). */
export async function curlsShown(page: Page, within = page.locator('main')): Promise<string[]> {
  const calls = within.locator('details.api-call');
  const texts: string[] = [];
  for (let i = 0; i < (await calls.count()); i++) {
    await calls.nth(i).locator('summary').click();
    texts.push(await calls.nth(i).getByLabel('The call as a curl command').innerText());
  }
  return texts;
}

/**
 * axe-core's WCAG 2 A and AA violations on the page, as `rule (selectors)` lines. Injecting axe
 * needs a page opened with `bypassCSP: true` (the console's policy allows no foreign script).
 */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  const audit = (await page.evaluate("axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })")) as axe.AxeResults;
  return audit.violations.map((v) => `${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/**
 * Opens the console at `hash` (under `baseUrl`, the api's) in a signed-in page and checks it as
 * the screenshot tests do: its level-1 heading, what `ready` waits for, then no axe violation
 * (the page must be opened with `bypassCSP: true`, see axeViolations).
 */
export async function visitAndAudit(
  page: Page,
  baseUrl: string,
  hash: string,
  heading: string,
  ready: (page: Page) => Promise<unknown>,
): Promise<void> {
  await page.goto(`${baseUrl}/console/#${hash}`);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  await ready(page);
  expect(await axeViolations(page), `axe on #${hash}`).toEqual([]);
}
