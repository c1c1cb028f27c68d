import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import type { Page } from 'playwright-core';
import { closeBrowser, expectFitsAfterResize, openConsolePage, signInAt } from '../support/console-page.js';

/**
 * Who gets the agent panel. A small app with a langgraph.json whose own start script serves it,
 * built and deployed through the real api, builder and deployer processes (served on this
 * machine), is a plain app to the API (`agent_server: false`): no panel, no Agent tab. The same
 * page with the API's answer saying `agent_server: true` (the browser's copy of that one answer
 * rewritten, as a real agent server's build takes minutes) offers the LangGraph Studio link for
 * its URL and a copyable SDK snippet that says where the key goes, with the user's key only when
 * asked for; `null` (not known yet) shows nothing.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

let stand: CodeDeployStand;
let deployment: { id: string; name: string; url: string; agent_server: boolean | null };

/** The page sees `agent_server` as `value` in the API's answers for this deployment (the rest as the API sent it). */
async function apiSays(page: Page, value: boolean | null) {
  await page.route(
    (url) => url.pathname.endsWith(`/v2/deployments/${deployment.id}`),
    async (route) => {
      try {
        const response = await route.fetch();
        await route.fulfill({ response, json: { ...(await response.json()), agent_server: value } });
      } catch {
        // The page closed while this answer was on its way (the live view polls): nobody waits for it.
      }
    },
  );
}

beforeAll(async () => {
  stand = await startCodeDeployStand();
  stand.commit(
    'studio-agent',
    nodeApp(
      'studio-agent',
      `require('node:http').createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1');\n`,
    ),
  );
  const { deploymentId, revisionId } = await stand.deploy('studio-agent');
  const revision = await stand.untilDone(deploymentId, revisionId);
  expect(revision.status, revision.status_message).toBe('DEPLOYED');
  const d = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
  expect(d.url).toMatch(/^http:\/\//);
  deployment = { id: d.id, name: d.name, url: d.url, agent_server: d.agent_server };
}, 300_000);

afterAll(async () => {
  await closeBrowser();
  await stand?.close();
});

describe.runIf(hasChromium || browserRequired)('the agent panel of a deployment’s page', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('shows a plain app (agent_server: false) and one not known yet (null) no agent panel and no Agent tab', async () => {
    // Its own start script serves it: the API says it is no agent server.
    expect(deployment.agent_server).toBe(false);
    const w = await openConsolePage();
    try {
      await signInAt(
        w.page,
        `${stand.apiUrl}/console/#/deployments/${deployment.id}`,
        stand.api.adminKey,
        deployment.name,
      );
      await w.page.getByRole('region', { name: 'Overview' }).waitFor();
      expect(await w.page.getByRole('region', { name: 'Use this agent' }).count()).toBe(0);
      expect(await w.page.getByRole('link', { name: 'Open in LangGraph Studio' }).count()).toBe(0);
      const tabs = w.page.getByRole('navigation', { name: 'Deployment views' });
      expect(await tabs.getByRole('link').allInnerTexts()).toEqual(['Overview', 'Logs', 'Traces']);
      // Asked for by address, the Agent tab is not there either: the overview shows.
      await w.page.goto(`${stand.apiUrl}/console/#/deployments/${deployment.id}?tab=agent`);
      await w.page.getByRole('region', { name: 'Overview' }).waitFor();
      expect(await tabs.getByRole('link', { name: 'Agent' }).count()).toBe(0);

      await apiSays(w.page, null);
      await w.page.reload();
      await w.page.getByRole('region', { name: 'Overview' }).waitFor();
      expect(await w.page.getByRole('region', { name: 'Use this agent' }).count()).toBe(0);
      expect(await tabs.getByRole('link', { name: 'Agent' }).count()).toBe(0);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('links to LangGraph Studio for its URL and offers an SDK snippet with the URL, the key only when asked', async () => {
    const key = stand.api.adminKey;
    // Only to inject axe (WCAG checks of the new section) does this page bypass the policy.
    const w = await openConsolePage({ permissions: ['clipboard-read', 'clipboard-write'], bypassCSP: true });
    try {
      await apiSays(w.page, true);
      await signInAt(w.page, `${stand.apiUrl}/console/#/deployments/${deployment.id}`, key, deployment.name);
      const section = w.page.getByRole('region', { name: 'Use this agent' });
      await section.waitFor();
      expect(
        await w.page.getByRole('navigation', { name: 'Deployment views' }).getByRole('link').allInnerTexts(),
      ).toEqual(['Overview', 'Logs', 'Traces', 'Agent']);
      const studio = section.getByRole('link', { name: 'Open in LangGraph Studio' });
      expect(await studio.getAttribute('href')).toBe(
        `https://smith.langchain.com/studio/?baseUrl=${encodeURIComponent(deployment.url)}`,
      );

      const snippet = section.getByLabel('SDK snippet');
      const text = await snippet.innerText();
      expect(text).toContain(`apiUrl: ${JSON.stringify(deployment.url)}`);
      expect(text).toContain('apiKey: process.env.SLIPWAY_API_KEY');
      expect(text).toContain(`curl -X POST ${deployment.url}/assistants/search -H "X-Api-Key: $SLIPWAY_API_KEY"`);
      expect(await w.page.content()).not.toContain(key);

      await section.getByRole('button', { name: 'Copy snippet' }).click();
      await section.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
      expect(await w.page.evaluate('navigator.clipboard.readText()')).toBe(text);

      // Only on request does the page show the key, and the snippet then runs as it is.
      await section.getByLabel('Put my key in the snippet').check();
      expect(await snippet.innerText()).toContain(`apiKey: ${JSON.stringify(key)}`);
      expect(await snippet.innerText()).toContain(`X-Api-Key: ${key}`);
      await section.getByLabel('Put my key in the snippet').uncheck();
      expect(await w.page.content()).not.toContain(key);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-agent.png'), fullPage: true });
      await w.page.evaluate(axe.source);
      const audit = (await w.page.evaluate("axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })")) as axe.AxeResults;
      expect(audit.violations.map((v) => `${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);

      await w.page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(w.page, 375);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});
