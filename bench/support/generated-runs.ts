import { randomBytes, randomUUID } from 'node:crypto';

// What a LangGraph agent's langsmith client sends (the trace ingest scenario's load): whole traces
// of generated runs, as the client's multipart body and as the rows the store keeps.

/** Runs per request: the client's batch (`/info`'s `batch_ingest_config.size_limit`). */
export const BATCH = 100;
/** Runs per trace (see `traceRuns`). */
export const TRACE_RUNS = 10;
export const BOUNDARY = `slipwayBench${randomBytes(8).toString('hex')}`;

/** Word-like text, sliced at random to give payloads of varied sizes. */
const FILLER = (() => {
  const words = [
    'the',
    'agent',
    'called',
    'search',
    'with',
    'a',
    'query',
    'about',
    'deployment',
    'latency',
    'and',
    'then',
    'summarised',
    'results',
    'for',
    'user',
    'tokens',
    'graph',
    'node',
    'state',
  ];
  const out: string[] = [];
  for (let i = 0; i < 4_000; i++) out.push(words[Math.floor(Math.random() * words.length)]!);
  return out.join(' ');
})();
const text = (min: number, max: number) => {
  const n = min + Math.floor(Math.random() * (max - min));
  const at = Math.floor(Math.random() * (FILLER.length - n));
  return FILLER.slice(at, at + n);
};

/** `<time>Z<id>`: one dotted-order segment (microseconds, as the client writes them). */
const segment = (ms: number, id: string) => {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 19).replace(/[-:]/g, '')}${iso.slice(20, 23)}000Z${id}`;
};

export const MODEL = 'gpt-4o-mini';
const message = (type: 'HumanMessage' | 'AIMessage', kwargs: Record<string, unknown>) => ({
  lc: 1,
  type: 'constructor',
  id: ['langchain_core', 'messages', type],
  kwargs,
});

/** One run as the client sends it, and its row and payload as the store keeps them (for the raw baseline). */
export interface GeneratedRun {
  wire: Record<string, unknown>;
  row: unknown[];
  payload: { inputs: unknown; outputs: unknown; extra: unknown };
}

/**
 * A finished LangGraph trace of ten runs: the graph's root chain, three node chains under it, and
 * under each node a chat-model call (with `usage_metadata`, serialized as LangChain's tracer
 * sends it) and a tool call. Inputs and outputs are some 1–4 KB of JSON each.
 */
export function traceRuns(project: string, workspaceId: string, projectId: string, startMs: number): GeneratedRun[] {
  const ids = Array.from({ length: TRACE_RUNS }, () => randomUUID());
  const traceId = ids[0]!;
  const thread = randomUUID();
  const graphRun = randomUUID();
  const revision = 'rev-bench';
  const parentOf = (k: number) => (k === 0 ? null : k % 3 === 1 ? 0 : k - ((k - 1) % 3));
  const startOf = (k: number) => startMs + k * 150;
  const orders: string[] = [];
  for (let k = 0; k < TRACE_RUNS; k++) {
    const p = parentOf(k);
    orders.push(p === null ? segment(startOf(k), ids[k]!) : `${orders[p]!}.${segment(startOf(k), ids[k]!)}`);
  }
  const question = text(600, 1800);
  return ids.map((id, k) => {
    const parent = parentOf(k);
    const kind = k === 0 ? 'root' : parent === 0 ? 'node' : k % 3 === 2 ? 'llm' : 'tool';
    const duration = kind === 'root' ? 1_600 : kind === 'node' ? 400 : 100;
    const metadata: Record<string, unknown> = {
      thread_id: thread,
      run_id: graphRun,
      assistant_id: 'agent',
      graph_id: 'agent',
      revision_id: revision,
      ...(kind === 'root'
        ? {}
        : {
            langgraph_node: ['agent', 'tools', 'respond'][Math.floor((k - 1) / 3)],
            langgraph_step: Math.floor((k - 1) / 3) + 1,
          }),
      ...(kind === 'llm'
        ? { ls_provider: 'openai', ls_model_name: MODEL, ls_model_type: 'chat', ls_temperature: 0 }
        : {}),
    };
    const extra = {
      runtime: {
        sdk: 'langsmith-js',
        sdk_version: '0.3.0',
        library: 'langsmith',
        platform: 'linux',
        runtime: 'nodejs',
        runtime_version: process.version,
      },
      metadata,
      ...(kind === 'llm' ? { invocation_params: { model: MODEL, temperature: 0, stream: false } } : {}),
    };
    let inputs: unknown;
    let outputs: unknown;
    let tokens: [number, number, number] | null = null;
    if (kind === 'llm') {
      const [input, output] = [200 + Math.floor(Math.random() * 800), 20 + Math.floor(Math.random() * 200)];
      tokens = [input, output, input + output];
      const answer = text(400, 1500);
      inputs = {
        messages: [[message('HumanMessage', { content: question, additional_kwargs: {}, response_metadata: {} })]],
      };
      outputs = {
        generations: [
          [
            {
              text: answer,
              type: 'ChatGeneration',
              generation_info: { finish_reason: 'stop' },
              message: message('AIMessage', {
                content: answer,
                tool_calls: [],
                usage_metadata: { input_tokens: input, output_tokens: output, total_tokens: input + output },
                response_metadata: {
                  model_name: MODEL,
                  finish_reason: 'stop',
                  tokenUsage: { promptTokens: input, completionTokens: output, totalTokens: input + output },
                },
              }),
            },
          ],
        ],
        llm_output: { tokenUsage: { promptTokens: input, completionTokens: output, totalTokens: input + output } },
      };
    } else if (kind === 'tool') {
      inputs = { input: text(200, 600) };
      outputs = { output: text(1000, 3500) };
    } else {
      inputs = { messages: [{ role: 'user', content: question }] };
      outputs = {
        messages: [
          { role: 'user', content: question },
          { role: 'assistant', content: text(400, 2000) },
        ],
      };
    }
    const name =
      kind === 'root'
        ? 'LangGraph'
        : kind === 'node'
          ? String(metadata.langgraph_node)
          : kind === 'llm'
            ? 'ChatOpenAI'
            : 'search';
    const runType = kind === 'root' || kind === 'node' ? 'chain' : kind;
    const start = new Date(startOf(k)).toISOString();
    const end = new Date(startOf(k) + duration).toISOString();
    const tags = kind === 'root' ? [] : [`graph:step:${Math.floor((k - 1) / 3) + 1}`];
    const wire = {
      id,
      trace_id: traceId,
      parent_run_id: parent === null ? undefined : ids[parent],
      dotted_order: orders[k],
      name,
      run_type: runType,
      start_time: start,
      end_time: end,
      session_name: project,
      tags,
      extra,
      inputs,
      outputs,
    };
    // tracing_runs' columns (RunRepository's RUN_COLUMNS), as the api would promote them.
    const row = [
      workspaceId,
      id,
      start,
      projectId,
      traceId,
      parent === null ? null : ids[parent],
      orders[k],
      runType,
      name,
      'success',
      null,
      end,
      null,
      tokens?.[0] ?? null,
      tokens?.[1] ?? null,
      tokens?.[2] ?? null,
      kind === 'llm' ? MODEL : null,
      thread,
      revision,
      graphRun,
      'agent',
      null,
      null,
      tags,
      JSON.stringify(metadata),
      [],
    ];
    return { wire, row, payload: { inputs, outputs, extra } };
  });
}

/** A batch of whole traces started within the last hour. */
export function batch(project: string, workspaceId: string, projectId: string): GeneratedRun[] {
  const runs: GeneratedRun[] = [];
  while (runs.length < BATCH)
    runs.push(
      ...traceRuns(project, workspaceId, projectId, Date.now() - 120_000 - Math.floor(Math.random() * 3_000_000)),
    );
  return runs;
}

/**
 * The body the langsmith client's multipart ingest sends: per run a `post.<id>` part (the run
 * without its inputs, outputs and events) then `post.<id>.inputs` / `.outputs`, each
 * `application/json; length=N`.
 */
export function multipartBody(runs: GeneratedRun[]): Buffer {
  const chunks: Buffer[] = [];
  const part = (name: string, value: unknown) => {
    const data = Buffer.from(JSON.stringify(value));
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json; length=${data.length}\r\n\r\n`,
      ),
      data,
      Buffer.from('\r\n'),
    );
  };
  for (const { wire } of runs) {
    const { inputs, outputs, ...run } = wire;
    part(`post.${run.id}`, run);
    part(`post.${run.id}.inputs`, inputs);
    part(`post.${run.id}.outputs`, outputs);
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}
