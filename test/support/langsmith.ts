import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';

/** A langsmith client, unchanged, pointed at the test api's `/api/v1` with a Slipway key. */
export function langsmithClient(baseUrl: string, apiKey: string): Client {
  return new Client({ apiUrl: `${baseUrl}/api/v1`, apiKey, autoBatchTracing: true });
}

/** `<time>Z<id>`: one dotted-order segment. */
export function dottedSegment(at: Date, id: string): string {
  const iso = at.toISOString();
  return `${iso.slice(0, 19).replace(/[-:]/g, '')}${iso.slice(20, 23)}000Z${id}`;
}

/**
 * Sends one trace (a root chain and one llm child) that started at `start` to `project`, ended
 * `latencyMs` later, and waits until the client sent it. Its root carries `metadata`.
 */
export async function sendTrace(
  client: Client,
  project: string,
  options: { start?: Date; latencyMs?: number; name?: string; metadata?: Record<string, unknown> } = {},
): Promise<{ traceId: string; childId: string }> {
  const start = options.start ?? new Date(Date.now() - 5_000);
  const end = new Date(start.getTime() + (options.latencyMs ?? 1_500));
  const traceId = randomUUID();
  const childId = randomUUID();
  const rootOrder = dottedSegment(start, traceId);
  const childOrder = `${rootOrder}.${dottedSegment(new Date(start.getTime() + 10), childId)}`;
  const common = { trace_id: traceId, project_name: project };
  await client.createRun({
    ...common,
    id: traceId,
    dotted_order: rootOrder,
    name: options.name ?? 'agent',
    run_type: 'chain',
    start_time: start.getTime(),
    inputs: { q: 'hi' },
    extra: { metadata: options.metadata ?? {} },
  });
  await client.createRun({
    ...common,
    id: childId,
    parent_run_id: traceId,
    dotted_order: childOrder,
    name: 'llm',
    run_type: 'llm',
    start_time: start.getTime() + 10,
    inputs: {},
  });
  await client.updateRun(childId, {
    trace_id: traceId,
    parent_run_id: traceId,
    dotted_order: childOrder,
    end_time: end.getTime() - 10,
    outputs: { usage_metadata: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } },
  });
  await client.updateRun(traceId, {
    trace_id: traceId,
    dotted_order: rootOrder,
    end_time: end.getTime(),
    outputs: { a: 'done' },
  });
  await client.flush();
  return { traceId, childId };
}

/**
 * A stand-in for a user's own LangSmith (a remote service that cannot exist on this machine), as
 * a `startTestHost` listener (test/support/test-netns.ts): answers `GET …/info` with no flags (so
 * clients send plain bodies) and every write with 202, and prints one JSON line per request:
 * `{method, path, key, ids}`, `ids` being the run ids its body names.
 */
export const LANGSMITH_STAND_IN = `require('node:http').createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = require('node:zlib').gunzipSync(body);
    const ids = [...new Set(body.toString('latin1').match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) || [])];
    console.log(JSON.stringify({ method: req.method, path: req.url, key: req.headers['x-api-key'] || null, ids }));
    res.writeHead(req.url.endsWith('/info') ? 200 : 202, { 'content-type': 'application/json' }).end('{}');
  });
})`;

/** What a LANGSMITH_STAND_IN was sent, request by request. */
export const standInRequests = (
  output: string[],
): Array<{ method: string; path: string; key: string | null; ids: string[] }> =>
  output.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
