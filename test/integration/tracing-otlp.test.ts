import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'langsmith';
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { runIdOfSpan } from '@slipway/tracing';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 34: OTLP/HTTP trace ingest at /api/v1/otel/v1/traces, driven by the real OpenTelemetry
 * exporters (JSON and protobuf) and read back with the langsmith client, unchanged.
 */

let api: TestApi;
let apiUrl: string;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_RATE_LIMIT_PER_KEY: '100000' });
  apiUrl = `${api.baseUrl}/api/v1`;
});

afterAll(async () => {
  await api?.close();
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const count = async (table: string) => Number((await api.dataSource.query(`SELECT count(*) AS n FROM ${table}`))[0].n);
const otlpUrl = () => `${apiUrl}/otel/v1/traces`;

/** The exporter's export, recording each result (0 = success) so a refusal fails the test. */
function recording(exporter: SpanExporter): { exporter: SpanExporter; results: number[] } {
  const results: number[] = [];
  const original = exporter.export.bind(exporter);
  exporter.export = (spans: ReadableSpan[], done) =>
    original(spans, (result) => {
      results.push(result.code);
      done(result);
    });
  return { exporter, results };
}

/**
 * A small agent turn: a root chain, an LLM call with GenAI attributes (new token names), a tool
 * that fails, and an LLM call under the tool (the older prompt/completion token names).
 */
function emitTree(provider: BasicTracerProvider) {
  const tracer = provider.getTracer('slipway-test');
  const under = (parent: Span) => trace.setSpan(context.active(), parent);
  const root = tracer.startSpan('agent', {
    attributes: {
      'langsmith.span.kind': 'chain',
      'langsmith.metadata.thread_id': 'th-otel',
      'langsmith.metadata.tenant': 'acme',
      'input.value': '{"question":"weather?"}',
    },
  });
  const chat = tracer.startSpan(
    'chat gpt-test',
    {
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-test',
        'gen_ai.response.model': 'gpt-test-2026',
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 7,
        'gen_ai.prompt': JSON.stringify({ messages: [{ role: 'user', content: 'weather?' }] }),
        'gen_ai.completion': JSON.stringify({ choices: [{ role: 'assistant', content: 'let me look' }] }),
      },
    },
    under(root),
  );
  chat.end();
  const tool = tracer.startSpan(
    'search',
    { attributes: { 'gen_ai.operation.name': 'execute_tool', 'input.value': 'weather in Paris' } },
    under(root),
  );
  const inner = tracer.startSpan(
    'summarize',
    {
      attributes: {
        'gen_ai.operation.name': 'text_completion',
        'gen_ai.request.model': 'small-test',
        'gen_ai.usage.prompt_tokens': 3,
        'gen_ai.usage.completion_tokens': 2,
      },
    },
    under(tool),
  );
  inner.end();
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'search backend down' });
  tool.end();
  root.setAttribute('output.value', '{"answer":"sunny"}');
  root.end();
  const id = (s: Span) => runIdOfSpan(s.spanContext().spanId);
  return { root: id(root), chat: id(chat), tool: id(tool), inner: id(inner), traceHex: root.spanContext().traceId };
}

async function expectTree(project: string, ids: ReturnType<typeof emitTree>) {
  const c = new Client({ apiUrl, apiKey: api.adminKey });
  const runs = await collect(c.listRuns({ projectName: project, traceId: ids.root }));
  expect(runs.map((r) => r.dotted_order)).toEqual([...runs.map((r) => r.dotted_order!)].sort());
  const byId = new Map(runs.map((r) => [r.id, r]));
  expect([...byId.keys()].sort()).toEqual([ids.root, ids.chat, ids.tool, ids.inner].sort());
  expect(runs[0]!.id).toBe(ids.root);
  expect(byId.get(ids.root)).toMatchObject({
    name: 'agent',
    run_type: 'chain',
    trace_id: ids.root,
    status: 'success',
    inputs: { question: 'weather?' },
    outputs: { answer: 'sunny' },
  });
  expect(byId.get(ids.root)!.parent_run_id ?? null).toBeNull();
  expect(byId.get(ids.chat)).toMatchObject({
    name: 'chat gpt-test',
    run_type: 'llm',
    parent_run_id: ids.root,
    trace_id: ids.root,
    prompt_tokens: 12,
    completion_tokens: 7,
    total_tokens: 19,
    inputs: { messages: [{ role: 'user', content: 'weather?' }] },
    outputs: { choices: [{ role: 'assistant', content: 'let me look' }] },
  });
  expect(byId.get(ids.tool)).toMatchObject({
    run_type: 'tool',
    parent_run_id: ids.root,
    status: 'error',
    error: 'search backend down',
    inputs: { input: 'weather in Paris' },
  });
  expect(byId.get(ids.inner)).toMatchObject({
    run_type: 'llm',
    parent_run_id: ids.tool,
    trace_id: ids.root,
    prompt_tokens: 3,
    completion_tokens: 2,
    total_tokens: 5,
  });
  expect(byId.get(ids.inner)!.dotted_order!.startsWith(`${byId.get(ids.tool)!.dotted_order}.`)).toBe(true);

  const root = await c.readRun(ids.root);
  expect([...(root.child_run_ids ?? [])].sort()).toEqual([ids.chat, ids.tool].sort());
  expect(root.extra?.metadata).toMatchObject({ thread_id: 'th-otel', tenant: 'acme' });
  const models = await api.dataSource.query(
    `SELECT id, model, thread_id FROM tracing_runs WHERE id = ANY($1::uuid[])`,
    [[ids.chat, ids.inner, ids.root]],
  );
  expect(Object.fromEntries(models.map((m: { id: string; model: string | null }) => [m.id, m.model]))).toEqual({
    [ids.chat]: 'gpt-test-2026',
    [ids.inner]: 'small-test',
    [ids.root]: null,
  });
  const [summary] = await api.dataSource.query(
    `SELECT root_run_id, run_count, error_count, total_tokens, status, name FROM tracing_traces WHERE trace_id = $1`,
    [ids.root],
  );
  expect(summary).toMatchObject({
    root_run_id: ids.root,
    run_count: 4,
    error_count: 1,
    total_tokens: '24',
    status: 'success',
    name: 'agent',
  });
  // No piece of the trace is left on its own.
  expect(
    await api.dataSource.query(`SELECT trace_id FROM tracing_traces WHERE trace_id = ANY($1::uuid[])`, [
      [ids.chat, ids.tool, ids.inner],
    ]),
  ).toEqual([]);
}

describe('OTLP/HTTP exporters against /api/v1/otel/v1/traces', () => {
  it('JSON, one span per export as each ends (children before their parents): the runs form one trace', async () => {
    const { exporter, results } = recording(
      new JsonExporter({ url: otlpUrl(), headers: { 'x-api-key': api.adminKey, 'Langsmith-Project': 'otlp-json' } }),
    );
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const ids = emitTree(provider);
    await provider.forceFlush();
    await provider.shutdown();
    expect(results).toEqual([0, 0, 0, 0]);
    await expectTree('otlp-json', ids);
  });

  it('protobuf with gzip, the whole tree in one export', async () => {
    const { exporter, results } = recording(
      new ProtoExporter({
        url: otlpUrl(),
        compression: 'gzip' as never,
        headers: { 'x-api-key': api.adminKey, 'Langsmith-Project': 'otlp-proto' },
      }),
    );
    const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
    const ids = emitTree(provider);
    await provider.forceFlush();
    await provider.shutdown();
    expect(results).toEqual([0]);
    await expectTree('otlp-proto', ids);
  });

  it('answers as OTLP does: {"partialSuccess":{}} to JSON, an empty message to protobuf', async () => {
    const json = await fetch(otlpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': api.adminKey },
      body: '{"resourceSpans":[]}',
    });
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({ partialSuccess: {} });
    const proto = await fetch(otlpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', 'x-api-key': api.adminKey },
      body: new Uint8Array(),
    });
    expect(proto.status).toBe(200);
    expect(proto.headers.get('content-type')).toMatch(/^application\/x-protobuf/);
    expect((await proto.arrayBuffer()).byteLength).toBe(0);
  });

  it(
    'a span of the OTLP JSON mapping with ids in hex and times as strings, without a project header, ' +
      'lands in the default project',
    async () => {
      const traceId = randomUUID().replace(/-/g, '');
      const spanId = randomUUID().replace(/-/g, '').slice(0, 16);
      const now = BigInt(Date.now()) * 1_000_000n;
      const body = {
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
            scopeSpans: [
              {
                scope: { name: 'manual' },
                spans: [
                  {
                    traceId,
                    spanId,
                    name: 'plain',
                    kind: 1,
                    startTimeUnixNano: String(now - 2_000_000n),
                    endTimeUnixNano: String(now),
                    attributes: [
                      { key: 'langsmith.metadata.big', value: { intValue: '9007199254740993' } },
                      { key: 'gen_ai.usage.input_tokens', value: { intValue: '4' } },
                      {
                        key: 'langsmith.span.tags',
                        value: { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } },
                      },
                    ],
                    status: {},
                  },
                ],
              },
            ],
          },
        ],
      };
      const res = await fetch(otlpUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': api.adminKey },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      const run = await new Client({ apiUrl, apiKey: api.adminKey }).readRun(runIdOfSpan(spanId));
      expect(run).toMatchObject({
        name: 'plain',
        run_type: 'chain',
        tags: ['a', 'b'],
        prompt_tokens: 4,
        extra: { metadata: { big: '9007199254740993' } },
      });
      const [project] = await api.dataSource.query(
        `SELECT p.name FROM tracing_runs r JOIN tracing_projects p ON p.id = r.project_id WHERE r.id = $1`,
        [run.id],
      );
      expect(project.name).toBe('default');
    },
  );
});

describe('refusals write nothing', () => {
  let before: number;
  beforeAll(async () => {
    before = await count('tracing_runs');
  });
  const nothingWritten = async () => {
    expect(await count('tracing_runs')).toBe(before);
    expect(
      (await api.dataSource.query(`SELECT count(*) AS n FROM tracing_projects WHERE name = 'otlp-refused'`))[0].n,
    ).toBe('0');
  };
  const post = (body: string | Uint8Array, type: string, key = api.adminKey) =>
    fetch(otlpUrl(), {
      method: 'POST',
      headers: { 'content-type': type, 'x-api-key': key, 'langsmith-project': 'otlp-refused' },
      body,
    });
  const span = (over: Record<string, unknown> = {}) => ({
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              {
                traceId: 'ab'.repeat(16),
                spanId: 'cd'.repeat(8),
                name: 'x',
                startTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
                ...over,
              },
            ],
          },
        ],
      },
    ],
  });

  it('a bad key gets 401', async () => {
    expect((await post(JSON.stringify(span()), 'application/json', 'slw_not-a-key')).status).toBe(401);
    await nothingWritten();
  });

  it('malformed bodies get 4xx', async () => {
    expect((await post('{"resourceSpans": [', 'application/json')).status).toBe(422);
    expect((await post(JSON.stringify({ resourceSpans: 'no' }), 'application/json')).status).toBe(422);
    expect((await post(JSON.stringify(span({ traceId: 'xyz' })), 'application/json')).status).toBe(422);
    expect((await post(JSON.stringify(span({ startTimeUnixNano: undefined })), 'application/json')).status).toBe(422);
    expect((await post(JSON.stringify(span({ name: 'nul\u0000' })), 'application/json')).status).toBe(422);
    expect((await post(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), 'application/x-protobuf')).status).toBe(
      422,
    );
    expect((await post(JSON.stringify(span()), 'text/plain')).status).toBe(415);
    // One bad span among good ones refuses the export whole.
    const mixed = span();
    (mixed.resourceSpans[0]!.scopeSpans[0]!.spans as unknown[]).push({
      traceId: 'ab'.repeat(16),
      spanId: '00',
      name: 'bad',
      startTimeUnixNano: '1',
    });
    expect((await post(JSON.stringify(mixed), 'application/json')).status).toBe(422);
    await nothingWritten();
  });
});
