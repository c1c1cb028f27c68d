import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TOKENS, tokenAuthAgent } from '../support/agent-projects.js';
import { hostProject, type HostedProject } from '../support/agent-server-host.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 33 at the host: a project with a custom auth handler (langgraph.json `auth.path`,
 * test/fixtures/agent-server/token-auth.ts) served by the agent server host on its own, no
 * control plane (test/support/agent-server-host.ts). The host comes up (hostProject waits for a
 * plain GET /ok: no credential); the health and metadata routes answer without the handler,
 * everything else only through it; the identity it returns reaches runs, crons' included.
 * (Through a deployment, two instances and the serving URL: test/e2e/agent-server-custom-auth.test.ts.)
 */
let host: HostedProject;

const sdk = (authorization: string) =>
  new Client({ apiUrl: host.url, apiKey: null, defaultHeaders: { authorization } });
const input = { ran_as: [] as string[] };

beforeAll(async () => {
  host = await hostProject(tokenAuthAgent('host-auth-agent'));
}, 240_000);

afterAll(() => host?.stop(), 60_000);

describe("the agent server host under a project's custom auth handler", () => {
  it('answers GET /ok and GET /info without the handler, whatever the credential', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }] as Array<Record<string, string>>) {
      const ok = await fetch(`${host.url}/ok`, { headers });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ ok: true });
      const info = await fetch(`${host.url}/info`, { headers });
      expect(info.status).toBe(200);
      expect(((await info.json()) as { flags: unknown }).flags).toMatchObject({ assistants: true, crons: true });
    }
  });

  it("refuses every other route with the handler's 401: no credential, a wrong one, or Studio's scheme header", async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['POST', '/threads/search', {}],
      ['POST', '/assistants/search', {}],
      ['POST', '/runs/wait', { assistant_id: 'agent', input }],
      ['POST', '/runs/crons/search', {}],
      ['POST', '/store/items/search', {}],
      ['GET', '/threads/00000000-0000-4000-8000-000000000000/runs/00000000-0000-4000-8000-000000000001/stream'],
      ['POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
    ];
    const credentials: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer token-mallory' },
      { authorization: 'token-alice' },
      { 'x-auth-scheme': 'langsmith' },
    ];
    for (const [method, route, body] of routes) {
      for (const credential of credentials) {
        const res = await fetch(`${host.url}${route}`, {
          method,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...credential },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        expect(`${method} ${route} ${JSON.stringify(credential)}: ${res.status} ${await res.text()}`).toBe(
          `${method} ${route} ${JSON.stringify(credential)}: 401 token-auth: unknown or missing bearer token`,
        );
      }
    }
  });

  it("runs the graph as the handler's user, and keeps each user's threads their own", async () => {
    const alice = sdk(AUTH_TOKENS.alice);
    const bob = sdk(AUTH_TOKENS.bob);
    const thread = await alice.threads.create();
    expect(thread.metadata).toMatchObject({ owner: 'alice' });
    expect(await alice.runs.wait(thread.thread_id, 'agent', { input })).toEqual({ ran_as: ['alice'] });
    expect((await alice.threads.search()).map((t) => t.thread_id)).toContain(thread.thread_id);
    expect(await bob.threads.search()).toEqual([]);
    await expect(bob.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(bob.runs.wait(thread.thread_id, 'agent', { input })).rejects.toMatchObject({ status: 404 });
  }, 60_000);

  it("fires a cron's runs as the user who created it", async () => {
    const alice = sdk(AUTH_TOKENS.alice);
    const thread = await alice.threads.create();
    const cron = await alice.crons.createForThread(thread.thread_id, 'agent', { schedule: '* * * * * *', input });
    try {
      await expect(sdk(AUTH_TOKENS.bob).crons.search({ threadId: thread.thread_id })).resolves.toEqual([]);
      const state = await eventually(
        () => alice.threads.getState<typeof input>(thread.thread_id),
        (s) => !!s.values?.ran_as?.length,
        30_000,
        250,
      );
      expect(new Set(state.values.ran_as)).toEqual(new Set(['alice']));
    } finally {
      await alice.crons.delete(cron.cron_id);
    }
  }, 60_000);

  it('searches the store with an empty namespace prefix: every namespace, filters applied', async () => {
    const alice = sdk('Bearer token-alice');
    await alice.store.putItem(['notes-a'], 'k1', { v: 1, tag: 'x' });
    await alice.store.putItem(['notes-b', 'deep'], 'k2', { v: 2, tag: 'x' });
    const all = await alice.store.searchItems([], { limit: 100 });
    expect(all.items.map((i) => [i.namespace, i.key]).sort()).toEqual(
      expect.arrayContaining([
        [['notes-a'], 'k1'],
        [['notes-b', 'deep'], 'k2'],
      ]),
    );
    const filtered = await alice.store.searchItems([], { filter: { v: 2 }, limit: 100 });
    expect(filtered.items.map((i) => i.key)).toEqual(['k2']);
    const found = await alice.store.searchItems([], { query: 'x', limit: 1, offset: 1 });
    expect(found.items).toHaveLength(1);
  });
});
