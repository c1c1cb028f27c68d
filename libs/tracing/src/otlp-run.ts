import { isUuid } from '@slipway/domain';
import type { RunFields } from './run-ops.js';
import { obj, type OtlpSpan } from './otlp-spans.js';

/**
 * One span's run fields (docs/tracing.md, "OTLP"): its id, LangSmith's UUID of its span id;
 * its inputs, outputs, usage, model and run type from the GenAI semantic conventions,
 * OpenLLMetry's and OpenInference's names, or the langsmith client's own `langsmith.*`
 * attributes; everything else kept under `extra.otel`. Where the run sits in its trace is
 * decided for the whole export (`spansToOperations`).
 */

/** LangSmith's run id of an OTEL span id (langsmith's `getUuidFromOtelSpanId`). */
export function runIdOfSpan(spanId: string): string {
  const hex = spanId.padStart(16, '0');
  return `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4)}`;
}

const RUN_ID_OF_SPAN = /^00000000-0000-0000-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RUN_TYPES = new Set(['llm', 'chain', 'tool', 'retriever', 'embedding', 'prompt', 'parser']);

export function isoOf(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString();
}

/** A string attribute that holds JSON, parsed; other values as they are. */
function jsonish(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return v;
  try {
    return JSON.parse(t);
  } catch {
    return v;
  }
}

/** `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, … (OpenLLMetry's indexed messages) → `[{role, content}, …]`. */
function indexedMessages(attributes: Record<string, unknown>, prefix: string): Array<Record<string, unknown>> | null {
  const messages: Array<Record<string, unknown>> = [];
  for (const [key, value] of Object.entries(attributes)) {
    const m = new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.(\\d{1,4})\\.(.+)$`).exec(key);
    if (!m) continue;
    (messages[Number(m[1])] ??= {})[m[2]!] = jsonish(value);
  }
  const dense = messages.filter(Boolean);
  return dense.length ? dense : null;
}

/** A field's value as a run's inputs or outputs are: an object (a bare value becomes `{key: value}`). */
function asObject(v: unknown, key: string): Record<string, unknown> {
  const parsed = jsonish(v);
  return obj(parsed) ?? { [key]: parsed };
}

function ioOf(attributes: Record<string, unknown>, side: 'input' | 'output'): Record<string, unknown> | undefined {
  const genAi = side === 'input' ? 'gen_ai.prompt' : 'gen_ai.completion';
  if (attributes[genAi] !== undefined) return asObject(attributes[genAi], side);
  const messages = indexedMessages(attributes, genAi);
  if (messages) return side === 'input' ? { messages } : { choices: messages };
  // OpenInference's names (Arize, and the LLM frameworks it instruments).
  if (attributes[`${side}.value`] !== undefined) return asObject(attributes[`${side}.value`], side);
  return undefined;
}

const count = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

function usageOf(attributes: Record<string, unknown>): Record<string, number> | undefined {
  const own = obj(jsonish(attributes['langsmith.usage_metadata']));
  if (own) return own as Record<string, number>;
  const input = count(attributes['gen_ai.usage.input_tokens']) ?? count(attributes['gen_ai.usage.prompt_tokens']);
  const output = count(attributes['gen_ai.usage.output_tokens']) ?? count(attributes['gen_ai.usage.completion_tokens']);
  const total = count(attributes['gen_ai.usage.total_tokens']) ?? count(attributes['llm.usage.total_tokens']);
  if (input === undefined && output === undefined && total === undefined) return undefined;
  return { input_tokens: input ?? 0, output_tokens: output ?? 0, total_tokens: total ?? (input ?? 0) + (output ?? 0) };
}

function runTypeOf(attributes: Record<string, unknown>): string {
  const own = attributes['langsmith.span.kind'];
  if (typeof own === 'string' && RUN_TYPES.has(own.toLowerCase())) return own.toLowerCase();
  const operation = String(attributes['gen_ai.operation.name'] ?? '').toLowerCase();
  if (['chat', 'completion', 'text_completion', 'generate_content'].includes(operation)) return 'llm';
  if (operation === 'tool' || operation === 'execute_tool') return 'tool';
  if (operation === 'embeddings' || operation === 'embedding') return 'embedding';
  return 'chain';
}

const MAPPED = /^(gen_ai\.(prompt|completion)(\.|$)|gen_ai\.usage\.|langsmith\.|input\.value$|output\.value$)/;

/** One span's run fields, without its place in the tree (trace id, dotted order). */
export function runOf(span: OtlpSpan, project: string | null): RunFields & { parent_run_id: string | null } {
  const a = span.attributes;
  const id = runIdOfSpan(span.spanId);
  const metadata: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(a))
    if (key.startsWith('langsmith.metadata.')) metadata[key.slice('langsmith.metadata.'.length)] = value;
  const requestModel = typeof a['gen_ai.request.model'] === 'string' ? a['gen_ai.request.model'] : undefined;
  const responseModel = typeof a['gen_ai.response.model'] === 'string' ? a['gen_ai.response.model'] : undefined;
  if ((responseModel ?? requestModel) && metadata.ls_model_name === undefined)
    metadata.ls_model_name = responseModel ?? requestModel;
  const provider = a['gen_ai.provider.name'] ?? a['gen_ai.system'];
  if (typeof provider === 'string' && metadata.ls_provider === undefined) metadata.ls_provider = provider;
  const usage = usageOf(a);
  if (usage) metadata.usage_metadata = usage;
  const otherAttributes = Object.fromEntries(Object.entries(a).filter(([key]) => !MAPPED.test(key)));

  // LangSmith's own span processor names the nearest exported (traceable) ancestor, which may
  // not be the OTEL parent; a root it marks as such has none.
  const ownParent = a['langsmith.span.parent_id'];
  const parent =
    a['langsmith.is_root'] === true || a['langsmith.is_root'] === 'true'
      ? null
      : typeof ownParent === 'string' && RUN_ID_OF_SPAN.test(ownParent)
        ? ownParent.toLowerCase()
        : span.parentSpanId && runIdOfSpan(span.parentSpanId);

  const tags = a['langsmith.span.tags'];
  const sessionId = a['langsmith.trace.session_id'];
  const sessionName = a['langsmith.trace.session_name'];
  const exception = span.events.find((e) => e.name === 'exception');
  const error =
    span.status.code === 2
      ? span.status.message || String(exception?.attributes['exception.message'] ?? '') || 'error'
      : undefined;
  const reference = a['langsmith.reference_example_id'];
  return {
    id,
    parent_run_id: parent || null,
    name:
      typeof a['langsmith.trace.name'] === 'string' && a['langsmith.trace.name']
        ? a['langsmith.trace.name']
        : span.name,
    run_type: runTypeOf(a),
    start_time: isoOf(span.startNs),
    end_time: span.endNs ? isoOf(span.endNs) : null,
    ...(error ? { error } : {}),
    ...(tags === undefined
      ? {}
      : {
          tags: Array.isArray(tags)
            ? tags.map(String)
            : String(tags)
                .split(',')
                .map((t) => t.trim())
                .filter(Boolean),
        }),
    ...(typeof sessionId === 'string' && isUuid(sessionId)
      ? { session_id: sessionId }
      : { session_name: typeof sessionName === 'string' && sessionName ? sessionName : project }),
    ...(typeof reference === 'string' && isUuid(reference) ? { reference_example_id: reference } : {}),
    inputs: ioOf(a, 'input') ?? {},
    outputs: ioOf(a, 'output') ?? (span.endNs ? {} : undefined),
    events: span.events.map((e) => ({ name: e.name, time: isoOf(e.timeNs), kwargs: e.attributes })),
    extra: {
      metadata,
      ...(requestModel ? { invocation_params: { model: requestModel } } : {}),
      otel: {
        trace_id: span.traceId,
        span_id: span.spanId,
        span_kind: span.kind,
        scope: span.scope,
        resource: span.resource,
        attributes: otherAttributes,
      },
    },
  };
}
