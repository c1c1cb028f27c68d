import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TOKENS, deployAgent, tokenAuthAgent, type DeployedAgent } from '../support/agent-projects.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 33: agents with a custom auth handler deploy, and their handler decides who gets in. A
 * LangGraph.js project whose langgraph.json names an auth handler (test/fixtures/agent-server/
 * token-auth.ts: `Bearer token-alice` is alice, `Bearer token-bob` is bob, anything else gets
 * 401; each user sees only their own threads and crons) and whose graph records the identity
 * its run carries (whoami-graph.ts) is deployed with min_scale 2 by real api, builder and
 * deployer processes: the runtime's credential-less health probe passes, and the serving URL,
 * which asks for no Slipway key, hands every request to the handler. Called with the official
 * SDK. Builds install from the npm registry.
 */
const PORT_BASE = 42_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;

const as = (authorization: string) =>
  new Client({ apiUrl: agent.url, apiKey: null, defaultHeaders: { authorization } });
const input = { ran_as: [] as string[] };
type State = typeof input;

beforeAll(async () => {
  // Built from its repository: what its build makes of a custom auth handler is part of what this file checks.
  agent = await deployAgent(tokenAuthAgent('custom-auth-agent'), { portBase: PORT_BASE, minScale: 2, source: 'git' });
  expect(await agent.instances()).toHaveLength(2);
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

describe('an agent with a custom auth handler', () => {
  it('serves /ok and /info to anyone, and nothing else without the handler saying yes', async () => {
    for (const route of ['/ok', '/info']) expect((await fetch(`${agent.url}${route}`)).status).toBe(200);
    // No credential, a wrong one, and a Slipway key (taken off before the handler, which then sees none).
    for (const headers of [{}, { authorization: 'Bearer token-mallory' }, { 'x-api-key': agent.apiKey }] as Array<
      Record<string, string>
    >) {
      const res = await fetch(`${agent.url}/threads/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: '{}',
      });
      expect(`${res.status} ${await res.text()}`).toBe('401 token-auth: unknown or missing bearer token');
    }
    await expect(as('Bearer token-mallory').runs.wait(null, 'agent', { input })).rejects.toMatchObject({ status: 401 });
  });

  it("runs the graph as alice, and bob can neither list nor read alice's thread", async () => {
    const alice = as(AUTH_TOKENS.alice);
    const bob = as(AUTH_TOKENS.bob);
    const thread = await alice.threads.create();
    expect(await alice.runs.wait(thread.thread_id, 'agent', { input })).toEqual({ ran_as: ['alice'] });
    expect((await alice.threads.search()).map((t) => t.thread_id)).toContain(thread.thread_id);
    expect(await bob.threads.search()).toEqual([]);
    await expect(bob.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(bob.threads.getState(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    expect(await bob.runs.wait(null, 'agent', { input })).toEqual({ ran_as: ['bob'] });
  }, 60_000);

  it("carries the user's identity into a background run, joined through each instance", async () => {
    const alice = as(AUTH_TOKENS.alice);
    const thread = await alice.threads.create();
    const run = await alice.runs.create(thread.thread_id, 'agent', { input });
    for (const instance of await agent.instances()) {
      const direct = new Client({
        apiUrl: instance.url,
        apiKey: null,
        defaultHeaders: { authorization: AUTH_TOKENS.alice },
      });
      await direct.runs.join(thread.thread_id, run.run_id);
      expect((await direct.threads.getState<State>(thread.thread_id)).values).toEqual({ ran_as: ['alice'] });
      await expect(
        new Client({
          apiUrl: instance.url,
          apiKey: null,
          defaultHeaders: { authorization: AUTH_TOKENS.bob },
        }).runs.join(thread.thread_id, run.run_id),
      ).rejects.toMatchObject({ status: 404 });
    }
  }, 60_000);

  it("fires a cron's runs as the user who created it, and only they see the cron", async () => {
    const alice = as(AUTH_TOKENS.alice);
    const thread = await alice.threads.create();
    const cron = await alice.crons.createForThread(thread.thread_id, 'agent', { schedule: '*/2 * * * * *', input });
    try {
      expect((await alice.crons.search({ threadId: thread.thread_id })).map((c) => c.cron_id)).toEqual([cron.cron_id]);
      expect(await as(AUTH_TOKENS.bob).crons.search({ threadId: thread.thread_id })).toEqual([]);
      const state = await eventually(
        () => alice.threads.getState<State>(thread.thread_id),
        (s) => !!s.values?.ran_as?.length,
        30_000,
        250,
      );
      expect(new Set(state.values.ran_as)).toEqual(new Set(['alice']));
    } finally {
      await alice.crons.delete(cron.cron_id);
    }
  }, 60_000);
});
