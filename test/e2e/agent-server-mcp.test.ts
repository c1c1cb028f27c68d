import type { Client as LangGraphClient } from '@langchain/langgraph-sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAgent, type DeployedAgent } from '../support/agent-projects.js';

/**
 * Issue 19, item 6: the agent server's MCP endpoint. A LangGraph.js project with two graphs (`echo`,
 * a zod-typed state, and `steps`, with a description in langgraph.json) is deployed with min_scale
 * 2, pre-built (writeAgentArtifact), by real api and deployer processes; the official MCP SDK client (Streamable HTTP)
 * talks to `<deployment URL>/mcp` with the workspace key, and the LangGraph SDK sets up assistants
 * and checks that tool runs leave no thread behind.
 */
const PORT_BASE = 36_000 + Math.floor(Math.random() * 2_000);

let agent: DeployedAgent;
let url: string;
let apiKey: string;
let langgraph: LangGraphClient;

/** An MCP client connected to the deployment's /mcp with `headers`. */
async function mcpClient(headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'slipway-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
}

const textOf = (result: Record<string, unknown>) =>
  (result.content as Array<{ type: string; text: string }>).map((c) => c.text).join('');

const ECHO_GRAPH = `import { END, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';

const State = z.object({
  text: z.string().describe('What to echo'),
  shout: z.boolean().optional(),
  reply: z.string().optional(),
});

export const graph = new StateGraph(State)
  .addNode('echo', async (state) => {
    if (state.text === 'boom') throw new Error('echo refuses to say boom');
    return { reply: state.shout ? state.text.toUpperCase() : state.text + '!' };
  })
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();
`;

const STEPS_GRAPH = `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

export const graph = new StateGraph(Annotation.Root({ steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) }))
  .addNode('first', async () => ({ steps: ['first'] }))
  .addNode('second', async () => ({ steps: ['second'] }))
  .addEdge(START, 'first')
  .addEdge('first', 'second')
  .addEdge('second', END)
  .compile();
`;

beforeAll(async () => {
  agent = await deployAgent(
    {
      name: 'mcp-agent',
      files: {
        'package.json': JSON.stringify({
          name: 'mcp-agent',
          private: true,
          type: 'module',
          dependencies: { '@langchain/langgraph': '1.7.3', '@langchain/core': '1.4.0', zod: '4.6.7' },
        }),
        'src/echo.ts': ECHO_GRAPH,
        'src/steps.ts': STEPS_GRAPH,
      },
      config: {
        graphs: {
          echo: './src/echo.ts:graph',
          steps: { path: './src/steps.ts:graph', description: 'Appends its two steps to the steps it is given.' },
        },
      },
    },
    { portBase: PORT_BASE, minScale: 2 },
  );
  ({ url, apiKey, client: langgraph } = agent);
  expect(await agent.instances()).toHaveLength(2);
}, 420_000);

afterAll(() => agent?.stop(), 120_000);

describe('agent servers: the MCP endpoint (/mcp, Streamable HTTP)', () => {
  it('requires a workspace API key, as every route of the deployment', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(initialize),
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ 'x-api-key': 'slw_not-a-key-of-anyone' })).status).toBe(401);
    // The official client gives up at once, naming the status.
    await expect(mcpClient({})).rejects.toMatchObject({
      code: 401,
      message: expect.stringContaining('requires an API key'),
    });

    const answer = await post({ 'x-api-key': apiKey });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { protocolVersion: '2025-06-18', capabilities: { tools: {} } },
    });
    // Stateless: no session to open a stream on or to end.
    expect((await fetch(`${url}/mcp`, { headers: { 'x-api-key': apiKey, accept: 'text/event-stream' } })).status).toBe(
      405,
    );
  });

  it('says in /info that it serves MCP and not A2A', async () => {
    const info = await fetch(`${url}/info`, { headers: { 'x-api-key': apiKey } });
    expect(((await info.json()) as { flags: Record<string, boolean> }).flags).toMatchObject({ mcp: true, a2a: false });
  });

  it("lists every assistant as a tool: its name, its description, its graph's input schema", async () => {
    await langgraph.assistants.create({ graphId: 'echo', name: 'echo_polite', description: 'Echoes, politely.' });
    // A second assistant named like the graph's own goes by its id.
    const twin = await langgraph.assistants.create({ graphId: 'echo', name: 'echo' });
    const client = await mcpClient({ 'x-api-key': apiKey });
    try {
      const { tools } = await client.listTools();
      const byName = Object.fromEntries(tools.map((t: Tool) => [t.name, t]));
      expect(Object.keys(byName).sort()).toEqual(['echo', 'echo_polite', 'steps', twin.assistant_id].sort());
      expect(byName.steps!.description).toBe('Appends its two steps to the steps it is given.');
      expect(byName.echo_polite!.description).toBe('Echoes, politely.');
      expect(byName.echo!.inputSchema).toMatchObject({
        type: 'object',
        properties: { text: { type: 'string', description: 'What to echo' }, shout: { type: 'boolean' } },
      });
      expect(byName.steps!.inputSchema.type).toBe('object');
    } finally {
      await client.close();
    }
  }, 60_000);

  it("runs an assistant without a thread and returns the run's output, through either instance", async () => {
    const threadsBefore = await langgraph.threads.search({ limit: 1000 });
    const client = await mcpClient({ 'x-api-key': apiKey });
    try {
      // Requests land on both instances (each is its own HTTP request, no session holds them).
      for (const text of ['one', 'two', 'three', 'four']) {
        const result = await client.callTool({ name: 'echo', arguments: { text, shout: text === 'two' } });
        expect(result.isError ?? false).toBe(false);
        const reply = text === 'two' ? 'TWO' : `${text}!`;
        expect(JSON.parse(textOf(result))).toEqual({ text, shout: text === 'two', reply });
        expect(result.structuredContent).toEqual({ text, shout: text === 'two', reply });
      }
      const steps = await client.callTool({ name: 'steps', arguments: { steps: ['given'] } });
      expect(JSON.parse(textOf(steps))).toEqual({ steps: ['given', 'first', 'second'] });
    } finally {
      await client.close();
    }
    // Stateless runs: their temporary threads are gone.
    expect((await langgraph.threads.search({ limit: 1000 })).map((t) => t.thread_id).sort()).toEqual(
      threadsBefore.map((t) => t.thread_id).sort(),
    );
  }, 120_000);

  it("answers a graph's failure as a tool error and an unknown tool as invalid params", async () => {
    const client = await mcpClient({ 'x-api-key': apiKey });
    try {
      const failed = await client.callTool({ name: 'echo', arguments: { text: 'boom' } });
      expect(failed.isError).toBe(true);
      expect(textOf(failed)).toContain('echo refuses to say boom');
      const unknown = await client.callTool({ name: 'no_such_agent', arguments: {} }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(unknown).toBeInstanceOf(McpError);
      expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);
    } finally {
      await client.close();
    }
  }, 60_000);
});
