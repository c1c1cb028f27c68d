import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostProject, type HostedProject } from '../support/agent-server-host.js';

/**
 * The agent server's MCP endpoint under a graph's custom auth (langgraph.json `auth`): the host
 * (services/agent-server, installed as the builder installs it) on its own, no control plane,
 * serving a graph whose auth handler names the user from an `x-user` header and lets each user
 * see only the assistants they created. The official MCP client lists and calls tools as two users.
 */
const ECHO = `import { END, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';

export const graph = new StateGraph(z.object({ text: z.string(), reply: z.string().optional() }))
  .addNode('echo', async (state) => ({ reply: state.text + '!' }))
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();
`;
const AUTH = `import { Auth, HTTPException } from '@langchain/langgraph-sdk/auth';

export const auth = new Auth()
  .authenticate(async (request) => {
    const user = request.headers.get('x-user');
    if (!user) throw new HTTPException(401, { message: 'Who are you?' });
    return { identity: user, permissions: [] };
  })
  .on('assistants', ({ user, value, action }) => {
    if (action === 'create') value.metadata = { ...value.metadata, owner: user.identity };
    return { owner: user.identity };
  });
`;

let host: HostedProject;
let base: string;

const mcp = async (user: string): Promise<Client> => {
  const client = new Client({ name: 'auth-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { 'x-user': user } } }),
  );
  return client;
};

beforeAll(async () => {
  host = await hostProject({
    name: 'mcp-auth-agent',
    files: { 'src/echo.ts': ECHO, 'src/auth.ts': AUTH },
    config: { graphs: { echo: './src/echo.ts:graph' }, auth: { path: './src/auth.ts:auth' } },
  });
  base = host.url;
}, 240_000);

afterAll(() => host?.stop(), 60_000);

describe("agent server MCP under a graph's custom auth", () => {
  it('refuses a request the auth handler does not authenticate', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
  });

  it("lists and runs only the caller's own assistants", async () => {
    const created = await fetch(`${base}/assistants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({ graph_id: 'echo', name: 'alice_echo' }),
    });
    expect(created.status).toBe(200);

    const alice = await mcp('alice');
    const bob = await mcp('bob');
    try {
      expect((await alice.listTools()).tools.map((t) => t.name)).toEqual(['alice_echo']);
      // The graph's own assistant has no owner: nobody's tool. Bob has none.
      expect((await bob.listTools()).tools).toEqual([]);
      expect((await alice.callTool({ name: 'alice_echo', arguments: { text: 'hi' } })).structuredContent).toEqual({
        text: 'hi',
        reply: 'hi!',
      });
      await expect(bob.callTool({ name: 'alice_echo', arguments: { text: 'hi' } })).rejects.toMatchObject({
        code: ErrorCode.InvalidParams,
      });
    } finally {
      await Promise.all([alice.close(), bob.close()]);
    }
  }, 60_000);
});
