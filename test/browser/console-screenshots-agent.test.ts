import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askHumanGraph, deployAgent, interruptedThread, type DeployedAgent } from '../support/agent-projects.js';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { closeBrowser, openConsolePage, signInAt, visitAndAudit } from '../support/console-page.js';
import { prepareScreenshots, shoot } from '../support/screenshots.js';

/**
 * The Agent tab's pages in the light and the dark theme (console-screenshots.test.ts does the
 * rest): a LangGraph.js graph that stops for a human, pre-built (writeAgentArtifact) and served
 * through the real api, deployer and edge. Each page: its heading and key content, no console error, no axe
 * WCAG 2 A/AA violation, then its picture (test/browser/output/, and docs/images/ with
 * SLIPWAY_WRITE_SCREENSHOTS=1). What the pages do is console-threads.test.ts's to check.
 */
const PORT_BASE = 46_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;
let deployment: { id: string; name: string };
let waiting: string;

beforeAll(async () => {
  prepareScreenshots();
  agent = await deployAgent(
    { name: 'refund-agent', files: { 'src/agent.ts': askHumanGraph('Refund order 1042?') } },
    { portBase: PORT_BASE, minScale: 1, rolloutDeadlineMs: 300_000 },
  );
  const d = (await agent.http.get(`/v2/deployments/${agent.deploymentId}`)).body;
  deployment = { id: d.id, name: d.name };
  waiting = await interruptedThread(agent.client);
}, 600_000);

afterAll(async () => {
  await closeBrowser();
  await agent?.stop();
}, 120_000);

/** The page's checks (visitAndAudit), before its picture. */
const visit = (page: Page, hash: string, heading: string, ready: (page: Page) => Promise<unknown>) =>
  visitAndAudit(page, agent.http.baseUrl, hash, heading, ready);

describe.runIf(hasChromium || browserRequired)('the Agent tab, in both themes', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  for (const theme of ['light', 'dark'] as const) {
    it(`renders, passes axe and is photographed in the ${theme} theme`, async () => {
      // Only to inject axe does the page bypass the console's policy.
      const w = await openConsolePage({ colorScheme: theme, bypassCSP: true, viewport: { width: 1280, height: 860 } });
      const { page } = w;
      try {
        await signInAt(page, `${agent.http.baseUrl}/console/`, agent.apiKey);

        await visit(page, `/deployments/${deployment.id}?tab=agent&status=interrupted`, deployment.name, async (p) => {
          const row = p.locator(`tr[data-thread-id="${waiting}"]`);
          await row.getByText('Refund order 1042?').waitFor({ timeout: 30_000 });
          expect(
            await p.getByRole('navigation', { name: 'Deployment views' }).locator('[aria-current="page"]').innerText(),
          ).toBe('Agent');
        });
        await shoot(page, 'agent-threads', theme);

        await visit(page, `/deployments/${deployment.id}/threads/${waiting}`, `Thread ${waiting}`, (p) =>
          p.getByRole('region', { name: 'Interrupt 1 value' }).getByText('Refund order 1042?').waitFor(),
        );
        await shoot(page, 'agent-thread', theme);

        // An assistant opened: its versions and its graph drawn.
        await visit(page, `/deployments/${deployment.id}?tab=agent&view=assistants`, deployment.name, async (p) => {
          await p.getByRole('button', { name: 'agent', exact: true }).click();
          await p
            .getByRole('region', { name: 'Graph of agent, scrollable' })
            .locator('[data-node="ask_human"]')
            .waitFor();
        });
        await shoot(page, 'agent-assistants', theme);
        expect(w.errors).toEqual([]);
      } finally {
        await w.close();
      }
    }, 120_000);
  }
});
