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
  await client.createRun({ ...common, id: traceId, dotted_order: rootOrder, name: options.name ?? 'agent', run_type: 'chain', start_time: start.getTime(), inputs: { q: 'hi' }, extra: { metadata: options.metadata ?? {} } });
  await client.createRun({ ...common, id: childId, parent_run_id: traceId, dotted_order: childOrder, name: 'llm', run_type: 'llm', start_time: start.getTime() + 10, inputs: {} });
  await client.updateRun(childId, { trace_id: traceId, parent_run_id: traceId, dotted_order: childOrder, end_time: end.getTime() - 10, outputs: { usage_metadata: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } } });
  await client.updateRun(traceId, { trace_id: traceId, dotted_order: rootOrder, end_time: end.getTime(), outputs: { a: 'done' } });
  await client.flush();
  return { traceId, childId };
}
