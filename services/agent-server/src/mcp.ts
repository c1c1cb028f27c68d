// The deployment's MCP endpoint (/mcp, Streamable HTTP, stateless), as the official Agent Server
// offers it: each assistant is a tool (its name, its description, its graph's input schema), and
// calling a tool runs the assistant once without a thread and returns the run's output.
//
// Every read and run goes through the server's own routes by loopback, with the MCP request's own
// headers: the graph's custom auth (langgraph.json `auth`) authenticates and filters exactly as it
// does for a client calling those routes, and what a caller cannot see is no tool of theirs.
// Stateless (no session id, JSON responses): any instance answers any request, as every other route.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Hono } from 'hono';
import { apiModule, logger } from './upstream.js';

const { getLoopbackFetch } = await apiModule('loopback.mjs');

/** Tools per tools/list page (the cursor is the offset of the next page). */
const PAGE = 100;
/** The assistants served as tools: the first this many a caller can see (the most a search returns). */
const MAX_TOOLS = 1_000;
/** How long a listing waits for a graph's schemas. */
const SCHEMA_WAIT_MS = 5_000;
/** Headers of the MCP request that are not passed on to the routes it calls (the transport's own, or the body's). */
const NOT_PASSED = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'accept-encoding',
  'connection',
  'transfer-encoding',
  'last-event-id',
  'mcp-session-id',
  'mcp-protocol-version',
]);

interface Assistant {
  assistant_id: string;
  graph_id: string;
  name: string;
  description?: string | null;
}

/** Calls one of the server's routes as the MCP request's caller; a non-2xx answer is a protocol error naming it. */
async function call(headers: Headers, method: string, route: string, body?: unknown): Promise<any> {
  const res: Response = await getLoopbackFetch()(route, {
    method,
    headers: {
      ...Object.fromEntries([...headers].filter(([name]) => !NOT_PASSED.has(name))),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok)
    throw new McpError(
      res.status === 404 || res.status === 422 ? ErrorCode.InvalidParams : ErrorCode.InternalError,
      `${method} ${route} answered ${res.status}: ${text.slice(0, 500)}`,
    );
  // /runs/wait keeps its connection alive with newlines before the JSON.
  return text.trim() ? JSON.parse(text) : null;
}

/** Tool names are assistant names; a name an earlier assistant already took goes by the assistant's id. */
function toolNames(assistants: Assistant[]): Map<string, Assistant> {
  const byName = new Map<string, Assistant>();
  for (const a of assistants) byName.set(a.name && !byName.has(a.name) ? a.name : a.assistant_id, a);
  return byName;
}

/** The caller's tools: the assistants they can see, oldest first (a stable order, so names and pages stay put). */
async function tools(headers: Headers): Promise<Map<string, Assistant>> {
  return toolNames(
    await call(headers, 'POST', '/assistants/search', { limit: MAX_TOOLS, sort_by: 'created_at', sort_order: 'asc' }),
  );
}

/**
 * The assistant's schemas, or null when they fail or take longer than SCHEMA_WAIT_MS: the tool
 * still lists, taking any object. A graph whose state is not a zod schema has its schema
 * extracted from its TypeScript source (tens of seconds, once per graph and instance); that goes
 * on and is cached by the server, so a later listing has it.
 */
async function inputSchema(headers: Headers, assistantId: string): Promise<{ input_schema?: any } | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), SCHEMA_WAIT_MS)));
  const schemas = call(headers, 'GET', `/assistants/${assistantId}/schemas`).catch((err) => {
    logger.warn('MCP: no input schema for an assistant', { assistant_id: assistantId, error: String(err) });
    return null;
  });
  try {
    return await Promise.race([schemas, late]);
  } finally {
    clearTimeout(timer);
  }
}

function mcpServer(headers: Headers, graphDescriptions: Record<string, string>): Server {
  const server = new Server({ name: 'slipway-agent-server', version: '1.0.0' }, { capabilities: { tools: {} } });

  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const offset = Number(request.params?.cursor ?? 0);
    if (!Number.isInteger(offset) || offset < 0)
      throw new McpError(ErrorCode.InvalidParams, `Invalid cursor: ${request.params?.cursor}`);
    const all = [...(await tools(headers))];
    const page: Tool[] = await Promise.all(
      all.slice(offset, offset + PAGE).map(async ([name, a]) => {
        const input = (await inputSchema(headers, a.assistant_id))?.input_schema;
        return {
          name,
          description:
            a.description ||
            graphDescriptions[a.graph_id] ||
            `Runs the '${a.graph_id}' graph (assistant ${a.assistant_id}).`,
          inputSchema: input && typeof input === 'object' && input.type === 'object' ? input : { type: 'object' },
        };
      }),
    );
    return { tools: page, ...(all.length > offset + PAGE ? { nextCursor: String(offset + PAGE) } : {}) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: input = {} } = request.params;
    const assistant = (await tools(headers)).get(name);
    if (!assistant) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const output = await call(headers, 'POST', '/runs/wait', { assistant_id: assistant.assistant_id, input });
    if (output && typeof output === 'object' && '__error__' in output) {
      const { error, message } = output.__error__ as { error: string; message: string };
      return { isError: true, content: [{ type: 'text', text: `${error}: ${message}` }] };
    }
    return {
      content: [{ type: 'text', text: JSON.stringify(output) }],
      ...(output && typeof output === 'object' && !Array.isArray(output) ? { structuredContent: output } : {}),
    };
  });
  return server;
}

/**
 * Mounts /mcp on `app`. `graphDescriptions` are the `description`s of langgraph.json's graphs,
 * a tool's description when its assistant has none.
 */
export function mountMcpRoute(app: Hono, graphDescriptions: Record<string, string>): void {
  // Stateless: no stream to open or session to end.
  app.on(['GET', 'DELETE'], '/mcp', (c) =>
    c.json({ detail: 'This MCP endpoint is stateless: POST each JSON-RPC message.' }, 405, { allow: 'POST' }),
  );
  app.post('/mcp', async (c) => {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const server = mcpServer(c.req.raw.headers, graphDescriptions);
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw);
    } finally {
      // The response is complete (JSON, not a stream): nothing of this request outlives it.
      await server.close();
    }
  });
}

/** The `description` of each graph of langgraph.json's `graphs` that has one. */
export function graphDescriptions(graphs: unknown): Record<string, string> {
  return Object.fromEntries(
    Object.entries((graphs ?? {}) as Record<string, string | { description?: string }>).flatMap(([id, g]) =>
      typeof g === 'object' && typeof g?.description === 'string' ? [[id, g.description]] : [],
    ),
  );
}
