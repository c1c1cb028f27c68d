import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { closeBrowser, curlsShown, expectFitsAfterResize, openConsolePage, signInAt } from '../support/console-page.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A deployment's custom domains on its console page (docs/api.md, Domains), through the UI only,
 * against the real api (serving the console the test run's global setup builds), verification on
 * (the default): a host claimed through the form waits for its DNS proof and shows the TXT record
 * to publish; the API's refusals (a reserved host, 422; a host another deployment holds, 409) show
 * in its words; once verified the section shows it active after its own poll; Remove, confirmed,
 * releases it. No edge runs here: the test marks the host verified in the database as the edge
 * does when it finds the record. Screenshots go to test/browser/output/.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');
const HOST = 'shop.example.com';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
}, 60_000);

afterAll(async () => {
  await closeBrowser();
  await api?.close();
});

const consoleUrl = () => `${api.baseUrl}/console/`;

/** A deployment on Slipway's own runtime (no listener): nothing builds, it only holds domains here. */
async function deployment(): Promise<{ id: string; name: string }> {
  const res = await api.http.post('/v2/deployments', {
    name: `domains-${randomUUID().slice(0, 8)}`,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const domainsOf = async (id: string) =>
  (await api.http.get(`/v2/deployments/${id}/domains`)).body.resources as Array<{
    host: string;
    state: string;
    verification: { name: string; value: string } | null;
  }>;

describe.runIf(hasChromium || browserRequired)('the Domains section of a deployment’s page', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('adds a domain that waits for its DNS proof, shows the API’s 422 and 409, turns active once verified, ' +
    'and removes it after a confirmation', async () => {
    const [a, b] = [await deployment(), await deployment()];
    // Only to inject axe (WCAG checks of the section) does this page bypass the policy.
    const w = await openConsolePage({ permissions: ['clipboard-read', 'clipboard-write'], bypassCSP: true });
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${a.id}`, api.adminKey, a.name);
      const section = w.page.getByRole('region', { name: 'Domains' });
      await section.locator('.empty-state').waitFor();

      // Claimed through the form: pending, with the TXT record to publish.
      await section.getByLabel('Domain to add').fill(HOST);
      await section.getByRole('button', { name: 'Add domain' }).click();
      const card = section.locator(`li[data-host="${HOST}"]`);
      await card.getByText('Waiting for DNS proof').waitFor();
      const [claimed] = await domainsOf(a.id);
      expect(claimed).toMatchObject({
        host: HOST,
        state: 'pending_verification',
        verification: { name: `_slipway-challenge.${HOST}` },
      });
      const { name, value } = claimed!.verification!;
      const codes = await card.locator('dd code').allInnerTexts();
      expect(codes).toEqual(['TXT', name, value]);
      expect(await card.getByRole('link').count()).toBe(0);
      expect(await card.innerText()).toMatch(/publish this TXT record at your DNS provider/);
      expect(await section.getByLabel('Domain to add').inputValue()).toBe('');
      const [post] = await curlsShown(w.page, section);
      expect(post).toContain(`curl -X POST '${api.baseUrl}/v2/deployments/${a.id}/domains'`);
      expect(post).toContain(`-d '{"host":"${HOST}"}'`);
      // Each part of the record copies as it is.
      await card.locator('dd').filter({ hasText: value }).getByRole('button', { name: 'Copy' }).click();
      await card.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
      expect(await w.page.evaluate('navigator.clipboard.readText()')).toBe(value);
      await card.locator('dd').filter({ hasText: name }).getByRole('button', { name: 'Copy' }).click();
      await expect.poll(() => w.page.evaluate('navigator.clipboard.readText()')).toBe(name);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-domains-pending.png'), fullPage: true });
      await w.page.evaluate(axe.source);
      const audit = (await w.page.evaluate("axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })")) as axe.AxeResults;
      expect(audit.violations.map((v) => `${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);

      // A host nobody may claim: the API's 422, in its words; nothing added.
      const reserved = await api.http.post(`/v2/deployments/${a.id}/domains`, { host: 'x.localhost' });
      expect(reserved.status).toBe(422);
      await section.getByLabel('Domain to add').fill('x.localhost');
      await section.getByRole('button', { name: 'Add domain' }).click();
      await section.getByRole('alert').filter({ hasText: reserved.body.detail }).waitFor();
      expect((await domainsOf(a.id)).map((d) => d.host)).toEqual([HOST]);
      expect(await section.locator('li[data-host]').count()).toBe(1);

      // Another deployment's page: the host is held, the API's 409 in its words.
      await w.page.goto(`${consoleUrl()}#/deployments/${b.id}`);
      await w.page.getByRole('heading', { name: b.name, level: 1 }).waitFor();
      await section.locator('.empty-state').waitFor();
      await section.getByLabel('Domain to add').fill(HOST);
      await section.getByRole('button', { name: 'Add domain' }).click();
      const held = await api.http.post(`/v2/deployments/${b.id}/domains`, { host: HOST });
      expect(held.status).toBe(409);
      await section.getByRole('alert').filter({ hasText: held.body.detail }).waitFor();
      expect(await domainsOf(b.id)).toEqual([]);

      // Back on the first: the edge (not run here) found the TXT record. The update stands for
      // its verification; the section, polling while the host is pending, shows it active.
      await w.page.goto(`${consoleUrl()}#/deployments/${a.id}`);
      await w.page.getByRole('heading', { name: a.name, level: 1 }).waitFor();
      await card.getByText('Waiting for DNS proof').waitFor();
      // What the edge writes after a look that found nothing shows as a line of its own.
      const notYet = `No TXT record ${name} was found yet (ENOTFOUND).`;
      await api.dataSource.query(`UPDATE deployment_domains SET error = $2, checked_at = now() WHERE host = $1`, [
        HOST,
        notYet,
      ]);
      await card.locator('p').filter({ hasText: notYet }).waitFor({ timeout: 15_000 });
      await api.dataSource.query(
        `UPDATE deployment_domains SET verified_at = now(), state = 'active', error = NULL WHERE host = $1`,
        [HOST],
      );
      await card.getByText('Active', { exact: true }).waitFor({ timeout: 15_000 });
      expect(await card.getByRole('link', { name: HOST }).getAttribute('href')).toBe(`https://${HOST}`);
      expect(await card.locator('dd').count()).toBe(0);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-domains-active.png'), fullPage: true });

      // Remove, confirmed: gone from the section and from the API.
      await card.getByRole('button', { name: `Remove ${HOST}` }).click();
      const dialog = w.page.getByRole('dialog', { name: 'Remove domain?' });
      expect(await dialog.innerText()).toContain(HOST);
      await dialog.getByRole('button', { name: 'Remove domain' }).click();
      await card.waitFor({ state: 'detached' });
      await section.locator('.empty-state').waitFor();
      expect(await domainsOf(a.id)).toEqual([]);
      const curls = await curlsShown(w.page, section);
      expect(curls.at(-1)).toContain(`curl -X DELETE '${api.baseUrl}/v2/deployments/${a.id}/domains/${HOST}'`);

      await w.page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(w.page, 375);
      // The browser reports the refusals the test provoked; nothing else went wrong.
      expect(w.errors.filter((e) => !/status of (409|422)/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('is not there for a deployment on a listener (its cluster renders its own Ingress)', async () => {
    const listenerId = await createListener(api, `console-domains-${randomUUID()}`, ['agents']);
    const d = await createImageDeployment(api, `on-listener-${randomUUID().slice(0, 8)}`, listenerId);
    const name = (await api.http.get(`/v2/deployments/${d.id}`)).body.name as string;
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${d.id}`, api.adminKey, name);
      await w.page.getByRole('heading', { name: 'Configuration', exact: true, level: 2 }).waitFor();
      expect(await w.page.getByRole('heading', { name: 'Domains', exact: true }).count()).toBe(0);
      expect(await w.page.getByLabel('Domain to add').count()).toBe(0);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});

mkdirSync(OUTPUT, { recursive: true });
