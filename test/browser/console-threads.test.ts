import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askHumanGraph, deployAgent, interruptedThread, type DeployedAgent } from '../support/agent-projects.js';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import {
  axeViolations,
  closeBrowser,
  expectFitsAfterResize,
  openConsolePage,
  signInAt,
} from '../support/console-page.js';
import { eventually } from '../support/service-process.js';

/**
 * A deployed agent seen from the console (docs/console.md, Agent): a LangGraph.js graph whose
 * `ask_human` node calls `interrupt()`, pre-built (writeAgentArtifact) and served through the real
 * api, deployer and edge, traced into the deployment's project as every run is. In Chromium, under the
 * console's own Content-Security-Policy (API calls to its own origin only), the page reaches the
 * agent through the api's gateway (/v2/deployments/{id}/agent/…) with the signed-in key: the inbox of threads waiting for a human, a
 * thread resumed with typed JSON, an Agent Inbox request (a second graph of the same project)
 * edited and answered, a trace's path drawn on the graph, and a fork from a node's checkpoint.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');
const PORT_BASE = 44_000 + Math.floor(Math.random() * 2_000);

/**
 * A second graph of the same project (so no second build): `review_email` asks, by LangGraph's
 * Agent Inbox convention, to review an email before it goes out, and records the answer.
 */
const INBOX_GRAPH = `import { Annotation, END, START, StateGraph, interrupt } from '@langchain/langgraph';

const State = Annotation.Root({
  email: Annotation<Record<string, unknown>>(),
  outcome: Annotation<unknown>(),
});

export const graph = new StateGraph(State)
  .addNode('review_email', async (state) => {
    const [answer] = interrupt([
      {
        action_request: { action: 'send_email', args: state.email },
        config: { allow_accept: true, allow_edit: true, allow_respond: true, allow_ignore: false },
        description: 'Review the email before it goes out.',
      },
    ]);
    if (answer.type === 'edit') return { email: answer.args.args, outcome: { type: 'edit', sent: answer.args.args } };
    if (answer.type === 'response') return { outcome: { type: 'response', reply: answer.args } };
    return { outcome: { type: answer.type, sent: state.email } };
  })
  .addEdge(START, 'review_email')
  .addEdge('review_email', END)
  .compile();
`;

let agent: DeployedAgent;
let deployment: { id: string; name: string };
/** The thread the graph interrupted, and one that never ran (idle). */
let waiting: string;
let idle: string;
/** The trace of the run that stopped at `ask_human`, and its `plan` node run. */
let traceId: string;
let planRunId: string;
/** The checkpoint `plan` ran from (the one a fork from `plan` starts at). */
let beforePlan: string;

interface QueriedRun {
  id: string;
  name: string;
  trace_id: string;
  parent_run_id: string | null;
  extra?: { metadata?: Record<string, unknown> };
}

beforeAll(async () => {
  mkdirSync(OUTPUT, { recursive: true });
  agent = await deployAgent(
    {
      name: 'hitl-agent',
      files: { 'src/agent.ts': askHumanGraph('Ship the plan?'), 'src/inbox.ts': INBOX_GRAPH },
      config: { graphs: { agent: './src/agent.ts:graph', inbox: './src/inbox.ts:graph' } },
    },
    { portBase: PORT_BASE, minScale: 1, rolloutDeadlineMs: 300_000 },
  );
  const { client, http } = agent;
  const d = (await http.get(`/v2/deployments/${agent.deploymentId}`)).body;
  deployment = { id: d.id, name: d.name };
  idle = (await client.threads.create()).thread_id;
  waiting = await interruptedThread(client);
  beforePlan = (await client.threads.getHistory(waiting, { limit: 10 })).find((s) =>
    s.tasks.some((t) => t.name === 'plan'),
  )!.checkpoint.checkpoint_id!;
  // The run's trace, once the instance's tracer sent its node runs.
  const runs = await eventually(
    async () =>
      (await http.post('/api/v1/runs/query', { session: [d.tracer_session_id], limit: 100 })).body.runs as QueriedRun[],
    (list) => list.some((r) => r.name === 'ask_human' && r.extra?.metadata?.thread_id === waiting),
    60_000,
    300,
  );
  const plan = runs.find((r) => r.name === 'plan' && r.extra?.metadata?.thread_id === waiting)!;
  planRunId = plan.id;
  traceId = plan.trace_id;
}, 600_000);

afterAll(async () => {
  await closeBrowser();
  await agent?.stop();
}, 120_000);

const consoleUrl = (hash: string) => `${agent.http.baseUrl}/console/#${hash}`;

/** The thread ids the Agent tab lists, top to bottom. */
const listedThreads = (page: Page) =>
  page.locator('tr[data-thread-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-thread-id')));

/** The graph's nodes as drawn: each one's place(s) in the path, '' when not visited. */
const drawnOrder = (page: Page) =>
  page
    .locator('svg.graph [data-node]')
    .evaluateAll((nodes) =>
      Object.fromEntries(nodes.map((n) => [n.getAttribute('data-node'), n.getAttribute('data-order') ?? ''])),
    );

describe.runIf(hasChromium || browserRequired)('a deployed agent in the console', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('lists the threads waiting for a human, shows what one waits on and resumes it with typed JSON', async () => {
    const w = await openConsolePage();
    const { page } = w;
    try {
      await signInAt(page, consoleUrl(`/deployments/${deployment.id}`), agent.apiKey, deployment.name);
      await page.getByRole('navigation', { name: 'Deployment views' }).getByRole('link', { name: 'Agent' }).click();
      await page.getByRole('heading', { name: 'Threads', level: 2 }).waitFor();
      // Every thread, newest first (asked of the deployment's URL, another origin, under the page's policy).
      await expect.poll(() => listedThreads(page), { timeout: 10_000 }).toEqual([waiting, idle]);
      await page.getByRole('link', { name: 'Waiting for a human' }).click();
      await page.getByRole('heading', { name: 'Waiting for a human', level: 2 }).waitFor();
      await expect.poll(() => listedThreads(page), { timeout: 10_000 }).toEqual([waiting]);
      expect(page.url()).toContain('status=interrupted');
      const row = page.locator(`tr[data-thread-id="${waiting}"]`);
      expect(await row.innerText()).toContain('Ship the plan?');
      await page.screenshot({ path: path.join(OUTPUT, 'console-agent-inbox.png'), fullPage: true });

      await row.getByRole('link', { name: `Thread ${waiting}` }).click();
      await page.getByRole('heading', { name: `Thread ${waiting}`, level: 1 }).waitFor();
      expect(page.url()).toContain(`#/deployments/${deployment.id}/threads/${waiting}`);
      await expect.poll(() => page.getByLabel('Thread status: interrupted').count()).toBe(1);
      const interrupt = page.getByRole('region', { name: 'Interrupt 1 value' });
      expect(JSON.parse(await interrupt.innerText())).toEqual({ question: 'Ship the plan?' });
      expect(JSON.parse(await page.getByRole('region', { name: 'State values' }).innerText())).toEqual({
        steps: ['go', 'plan'],
      });
      const traces = page.getByRole('link', { name: 'Traces of this thread' });
      expect(await traces.getAttribute('href')).toBe(`#/deployments/${deployment.id}?tab=traces&thread=${waiting}`);

      // No JSON, no run: the form says why.
      await page.getByLabel('Resume with (JSON)').fill('{approved: yes}');
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.getByRole('alert').filter({ hasText: 'That is no JSON' }).waitFor();
      expect(await agent.client.runs.list(waiting)).toHaveLength(1);

      await page.getByLabel('Resume with (JSON)').fill('{"approved": true, "note": "ship it"}');
      await page.getByRole('button', { name: 'Resume' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /^Resumed: run / })
        .waitFor();
      await page.getByLabel('Thread status: idle').waitFor({ timeout: 20_000 });
      await expect
        .poll(async () => JSON.parse(await page.getByRole('region', { name: 'State values' }).innerText()), {
          timeout: 10_000,
        })
        .toEqual({ steps: ['go', 'plan', 'ask_human', 'act'], answer: { approved: true, note: 'ship it' } });
      expect(await page.getByRole('heading', { name: 'Waiting for a human' }).count()).toBe(0);
      expect(
        await page.getByRole('table', { name: 'Runs of this thread, newest first' }).locator('tbody tr').count(),
      ).toBe(2);
      expect((await agent.client.threads.getState(waiting)).values).toMatchObject({
        answer: { approved: true, note: 'ship it' },
      });

      // The inbox is empty now.
      await page.goto(consoleUrl(`/deployments/${deployment.id}?tab=agent&status=interrupted`));
      await page.getByText('No thread is waiting for a human.').waitFor();
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('draws the path a traced run took on the graph, opens its thread, and forks a run from a node’s checkpoint', async () => {
    const w = await openConsolePage();
    const { page } = w;
    try {
      await signInAt(page, consoleUrl(`/deployments/${deployment.id}?tab=traces`), agent.apiKey, deployment.name);
      await page.locator(`tr[data-trace-id="${traceId}"] a`).click();
      const graph = page.getByRole('group', { name: /^Graph agent/ });
      await graph.waitFor();
      // Every node of the graph, the visited ones numbered in the order the trace ran them.
      expect(await drawnOrder(page)).toEqual({ __start__: '1', plan: '2', ask_human: '3', act: '', __end__: '' });
      expect(await graph.getByRole('img', { name: 'plan: visited 2nd' }).count()).toBe(1);
      expect(await graph.getByRole('img', { name: 'act: not visited' }).count()).toBe(1);
      expect(
        await page.getByRole('list', { name: 'Nodes visited, in order' }).getByRole('listitem').allInnerTexts(),
      ).toEqual(['__start__', 'plan', 'ask_human']);
      await page.screenshot({ path: path.join(OUTPUT, 'console-agent-graph-path.png'), fullPage: true });

      await page.locator(`li[data-run-id="${planRunId}"] a`).click();
      const details = page.getByRole('region', { name: /^Run plan/ });
      await details.waitFor();
      await details.getByRole('link', { name: 'Open thread' }).click();
      await page.getByRole('heading', { name: `Thread ${waiting}`, level: 1 }).waitFor();
      await page.getByLabel('Thread status: idle').waitFor();
      const historyBefore = (await agent.client.threads.getHistory(waiting, { limit: 50 })).length;
      await expect
        .poll(() => page.getByRole('list', { name: 'Checkpoint history' }).getByRole('listitem').count())
        .toBe(historyBefore);

      await page.goBack();
      await details.getByRole('button', { name: 'Fork from here' }).click();
      const dialog = page.getByRole('dialog', { name: 'Fork from here' });
      // The confirmation names the checkpoint `plan` ran from; Cancel does nothing.
      await dialog.locator('code', { hasText: beforePlan }).waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect(await agent.client.runs.list(waiting)).toHaveLength(2);
      await details.getByRole('button', { name: 'Fork from here' }).click();
      await dialog.locator('code', { hasText: beforePlan }).waitFor();
      await dialog.getByRole('button', { name: 'Fork', exact: true }).click();
      const forked = details.getByRole('status').filter({ hasText: /^Forked: run / });
      await forked.waitFor();
      expect(await forked.innerText()).toContain(beforePlan);
      await forked.getByRole('link', { name: 'See it on the thread' }).click();
      await page.getByRole('heading', { name: `Thread ${waiting}`, level: 1 }).waitFor();
      // The fork ran `plan` again from before it, and stopped at the human again: a branch beside the resumed one.
      await page.getByLabel('Thread status: interrupted').waitFor({ timeout: 20_000 });
      await expect
        .poll(async () => JSON.parse(await page.getByRole('region', { name: 'State values' }).innerText()), {
          timeout: 10_000,
        })
        .toEqual({ steps: ['go', 'plan'] });
      await expect
        .poll(() => page.getByRole('list', { name: 'Checkpoint history' }).getByRole('listitem').count())
        .toBeGreaterThan(historyBefore);
      expect(await agent.client.runs.list(waiting)).toHaveLength(3);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('passes an axe audit in dark mode and fits a 375 px screen: the inbox, a thread and a trace’s graph', async () => {
    // Only to inject axe does this page bypass the console's policy (the tests above run under it).
    const w = await openConsolePage({ colorScheme: 'dark', bypassCSP: true });
    const { page } = w;
    try {
      await signInAt(
        page,
        consoleUrl(`/deployments/${deployment.id}?tab=agent&status=interrupted`),
        agent.apiKey,
        deployment.name,
      );
      await page.locator(`tr[data-thread-id="${waiting}"]`).waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await page.goto(consoleUrl(`/deployments/${deployment.id}/threads/${waiting}`));
      await page.getByRole('region', { name: 'Interrupt 1 value' }).waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await page.setViewportSize({ width: 375, height: 800 });
      await expectFitsAfterResize(page, 375);
      await page.screenshot({ path: path.join(OUTPUT, 'console-agent-thread-mobile-dark.png'), fullPage: true });
      await page.goto(consoleUrl(`/deployments/${deployment.id}?tab=traces&trace=${traceId}&run=${planRunId}`));
      await page.locator('svg.graph [data-node="plan"]').waitFor();
      await expectFitsAfterResize(page, 375);
      await page.setViewportSize({ width: 1280, height: 900 });
      expect(await axeViolations(page)).toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it(
    'shows the assistants with their versions and graph, pauses, resumes and deletes a cron the SDK made, ' +
      'and deletes a thread',
    async () => {
      const { client } = agent;
      // Its own data: a yearly cron (it never fires during the test) and a thread to delete.
      const cron = await client.crons.create('agent', { schedule: '0 0 1 1 *', input: { steps: ['yearly'] } });
      const doomed = (await client.threads.create({ metadata: { purpose: 'delete-me' } })).thread_id;
      const enabledOf = async () =>
        (await client.crons.search({ limit: 100 })).find((c) => c.cron_id === cron.cron_id)?.enabled;
      const w = await openConsolePage();
      const { page } = w;
      try {
        await signInAt(
          page,
          consoleUrl(`/deployments/${deployment.id}?tab=agent&view=assistants`),
          agent.apiKey,
          deployment.name,
        );
        await page.getByRole('heading', { name: 'Assistants', level: 2 }).waitFor();
        await page.getByRole('button', { name: 'agent', exact: true }).click();
        await expect
          .poll(() => page.getByRole('list', { name: 'Versions of agent, newest first' }).innerText(), {
            timeout: 10_000,
          })
          .toContain('version 1');
        const graph = page.getByRole('group', { name: 'Graph agent' });
        await graph.waitFor();
        expect(
          await graph
            .locator('[data-node]')
            .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-node')).sort()),
        ).toEqual(['__end__', '__start__', 'act', 'ask_human', 'plan']);

        await page.getByRole('navigation', { name: 'Agent views' }).getByRole('link', { name: 'Crons' }).click();
        const row = page.locator(`tr[data-cron-id="${cron.cron_id}"]`);
        await row.waitFor();
        expect(await row.innerText()).toContain('0 0 1 1 *');
        await row.getByRole('button', { name: `Pause cron ${cron.cron_id}` }).click();
        await expect.poll(enabledOf, { timeout: 10_000 }).toBe(false);
        await expect.poll(() => row.innerText()).toContain('paused');
        await row.getByRole('button', { name: `Resume cron ${cron.cron_id}` }).click();
        await expect.poll(enabledOf, { timeout: 10_000 }).toBe(true);
        await row.getByRole('button', { name: `Delete cron ${cron.cron_id}` }).click();
        const confirm = page.getByRole('dialog', { name: 'Delete this cron?' });
        await confirm.getByRole('button', { name: 'Delete the cron' }).click();
        await row.waitFor({ state: 'detached' });
        expect(await enabledOf()).toBeUndefined();

        await page.goto(consoleUrl(`/deployments/${deployment.id}/threads/${doomed}`));
        await page.getByRole('heading', { name: `Thread ${doomed}`, level: 1 }).waitFor();
        await page.getByRole('button', { name: 'Delete thread' }).click();
        const sure = page.getByRole('dialog', { name: 'Delete this thread?' });
        // Cancel first: nothing goes.
        await sure.getByRole('button', { name: 'Cancel' }).click();
        expect((await client.threads.get(doomed)).thread_id).toBe(doomed);
        await page.getByRole('button', { name: 'Delete thread' }).click();
        await sure.getByRole('button', { name: 'Delete the thread' }).click();
        await page.getByRole('heading', { name: 'Threads', level: 2 }).waitFor();
        await expect(client.threads.get(doomed)).rejects.toThrow(/404|not found/i);
        expect(w.errors).toEqual([]);
      } finally {
        await w.close();
      }
    },
  );
  it('answers an Agent Inbox request: the action and its arguments in words, Edit and Respond only as allowed', async () => {
    const { client } = agent;
    const email = { to: 'team@example.com', subject: 'Launch', urgent: false };
    const interrupted = async () => {
      const thread = (await client.threads.create()).thread_id;
      await client.runs.wait(thread, 'inbox', { input: { email } });
      expect((await client.threads.get(thread)).status).toBe('interrupted');
      return thread;
    };
    const edited = await interrupted();
    const answered = await interrupted();
    const stateValues = async (page: Page) =>
      JSON.parse(await page.getByRole('region', { name: 'State values' }).innerText());
    const w = await openConsolePage();
    const { page } = w;
    try {
      await signInAt(
        page,
        consoleUrl(`/deployments/${deployment.id}?tab=agent&status=interrupted`),
        agent.apiKey,
        deployment.name,
      );
      // The inbox says what the request is, not its JSON.
      const row = page.locator(`tr[data-thread-id="${edited}"]`);
      await row.waitFor();
      expect(await row.innerText()).toContain('send_email: Review the email before it goes out.');

      await row.getByRole('link', { name: `Thread ${edited}` }).click();
      await page.getByRole('heading', { name: `Thread ${edited}`, level: 1 }).waitFor();
      await page.getByRole('definition').filter({ hasText: 'team@example.com' }).waitFor();
      const request = page.getByRole('article', { name: 'Action send_email' });
      expect(await request.innerText()).toContain('Review the email before it goes out.');
      // Each argument by name, in words (the agent's store may reorder them).
      const terms = await request.getByRole('term').allInnerTexts();
      const words = await request.getByRole('definition').allInnerTexts();
      expect(Object.fromEntries(terms.map((t, i) => [t, words[i]]))).toEqual({
        to: 'team@example.com',
        subject: 'Launch',
        urgent: 'no',
      });
      // No raw JSON, and only the answers the request's config allows (no Ignore).
      expect(await page.getByRole('region', { name: 'Interrupt 1 value' }).count()).toBe(0);
      const answers = request.getByRole('group', { name: 'Answer send_email' });
      expect(await answers.getByRole('button').allInnerTexts()).toEqual(['Accept', 'Edit', 'Respond']);

      // Edit: the arguments as JSON to change, checked before anything is sent.
      await answers.getByRole('button', { name: 'Edit' }).click();
      const editor = page.getByLabel('Arguments (JSON)');
      expect(JSON.parse(await editor.inputValue())).toEqual(email);
      await editor.fill('{to: ops}');
      await page.getByRole('button', { name: 'Send the edited arguments' }).click();
      await request.getByRole('alert').filter({ hasText: 'That is no JSON' }).waitFor();
      await editor.fill('["ops@example.com"]');
      await page.getByRole('button', { name: 'Send the edited arguments' }).click();
      await request.getByRole('alert').filter({ hasText: 'must be a JSON object' }).waitFor();
      expect(await client.runs.list(edited)).toHaveLength(1);
      const changed = { to: 'ops@example.com', subject: 'Launch, v2', urgent: true };
      await editor.fill(JSON.stringify(changed));
      await page.getByRole('button', { name: 'Send the edited arguments' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /^Resumed \(send_email edited\): run / })
        .waitFor();
      await page.getByLabel('Thread status: idle').waitFor({ timeout: 20_000 });
      await expect
        .poll(() => stateValues(page), { timeout: 10_000 })
        .toEqual({ email: changed, outcome: { type: 'edit', sent: changed } });
      expect((await client.threads.getState(edited)).values).toEqual({
        email: changed,
        outcome: { type: 'edit', sent: changed },
      });

      // The request and its open editor pass axe in dark mode and fit a phone (a page that may inject axe).
      const audit = await openConsolePage({ colorScheme: 'dark', bypassCSP: true });
      try {
        await signInAt(
          audit.page,
          consoleUrl(`/deployments/${deployment.id}/threads/${answered}`),
          agent.apiKey,
          `Thread ${answered}`,
        );
        await audit.page.getByRole('button', { name: 'Edit' }).click();
        await audit.page.getByLabel('Arguments (JSON)').waitFor();
        expect(await axeViolations(audit.page)).toEqual([]);
        await audit.page.setViewportSize({ width: 375, height: 800 });
        await expectFitsAfterResize(audit.page, 375);
        await audit.page.screenshot({ path: path.join(OUTPUT, 'console-agent-inbox-request.png'), fullPage: true });
        expect(audit.errors).toEqual([]);
      } finally {
        await audit.close();
      }

      // Respond: a text sent in place of the action; an empty one is refused first.
      await page.goto(consoleUrl(`/deployments/${deployment.id}/threads/${answered}`));
      await page.getByRole('heading', { name: `Thread ${answered}`, level: 1 }).waitFor();
      const other = page.getByRole('article', { name: 'Action send_email' });
      await other.getByRole('button', { name: 'Respond' }).click();
      await page.getByRole('button', { name: 'Send the response' }).click();
      await other.getByRole('alert').filter({ hasText: 'Type a response' }).waitFor();
      expect(await client.runs.list(answered)).toHaveLength(1);
      await page.getByLabel('Your response').fill('Not before legal has read it.');
      await page.getByRole('button', { name: 'Send the response' }).click();
      await page.getByLabel('Thread status: idle').waitFor({ timeout: 20_000 });
      expect((await client.threads.getState(answered)).values).toEqual({
        email,
        outcome: { type: 'response', reply: 'Not before legal has read it.' },
      });
      // The run resumed with the convention's list of one response.
      const [latest] = await client.runs.list(answered, { limit: 1 });
      expect((latest as unknown as { kwargs: { command: unknown } }).kwargs.command).toMatchObject({
        resume: [{ type: 'response', args: 'Not before legal has read it.' }],
      });
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);
});
