import type { Readable } from 'node:stream';
import { PayloadTooLargeError, UnprocessableError, UnsupportedMediaTypeError } from './errors.js';
import type { IngestLimits } from './limits.js';
import { readBodyBytes, parseJson } from './body.js';
import { decodeExportTraceRequest } from './otlp-proto.js';
import { unstorable, validateOperation, type RunFields, type RunOperation } from './run-ops.js';

/**
 * OTLP/HTTP trace export → run creates (docs/tracing.md, "OTLP"). A span is a run whose id is
 * LangSmith's UUID of its span id (`00000000-0000-0000-<16 hex>`), so the runs of a traceable
 * exported over OTEL keep the ids the langsmith client gave them; the trace id is the root
 * run's id, as in LangSmith.
 *
 * A span whose parent is not in the same export is written as a provisional root (its trace id
 * its own id, its parent id set): `SpanTreeRepository.attach` later moves its subtree under the
 * parent, whichever of the two arrives first.
 */

export type OtlpEncoding = 'json' | 'protobuf';

/** The content types an OTLP/HTTP exporter sends. */
export function otlpEncodingOf(headers: Record<string, unknown>): OtlpEncoding {
  const type = String(headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  throw new UnsupportedMediaTypeError('Send application/x-protobuf or application/json (OTLP/HTTP).');
}

export interface OtlpSpansRequest {
  operations: RunOperation[];
  /** The OTEL trace ids (hex) of the spans: the keys that serialize attaching within a trace. */
  otelTraceIds: string[];
}

/** Reads, decodes and maps a whole export; a malformed body or span refuses all of it (nothing is written). */
export async function readOtlpTraces(
  body: Readable,
  headers: Record<string, unknown>,
  limits: IngestLimits,
  project: string | null,
): Promise<OtlpSpansRequest> {
  const encoding = otlpEncodingOf(headers);
  const bytes = await readBodyBytes(body, headers, limits);
  let request: unknown;
  if (encoding === 'json') request = parseJson(bytes, 'body');
  else {
    try {
      request = decodeExportTraceRequest(bytes);
    } catch {
      throw new UnprocessableError('body: not an OTLP ExportTraceServiceRequest.');
    }
  }
  return spansToOperations(normalizeRequest(request, limits), project);
}

/** One span, decoded from either encoding. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint | null;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; timeNs: bigint; attributes: Record<string, unknown> }>;
  status: { code: number; message: string };
  resource: Record<string, unknown>;
  scope: { name?: string; version?: string };
}

const bad = (where: string, what: string): never => {
  throw new UnprocessableError(`${where}: ${what}.`);
};
const obj = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) ? (v as Record<string, unknown>) : null;
const list = (v: unknown, where: string): unknown[] =>
  v === undefined || v === null ? [] : Array.isArray(v) ? v : bad(where, 'expected an array');

/** An id: bytes (protobuf) or hex (the JSON mapping), `bytes` long; empty means none. */
function idOf(v: unknown, bytes: number, where: string): string | null {
  if (v === undefined || v === null || v === '') return null;
  const hex =
    v instanceof Uint8Array
      ? Buffer.from(v).toString('hex')
      : typeof v === 'string'
        ? v.toLowerCase()
        : bad(where, 'expected a hex id');
  if (hex.length === 0) return null;
  if (!new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(hex)) bad(where, `expected ${bytes} bytes of hex`);
  if (/^0+$/.test(hex)) return null;
  return hex;
}

/** A fixed64 time in nanoseconds (a decimal string, or a number, in the JSON mapping). */
function nanosOf(v: unknown, where: string): bigint | null {
  if (v === undefined || v === null) return null;
  if ((typeof v !== 'string' || !/^\d{1,20}$/.test(v)) && !(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0))
    bad(where, 'expected unsigned nanoseconds');
  const n = BigInt(v as string | number);
  return n === 0n ? null : n;
}

/** An AnyValue as plain JSON (int64 as a number when it is safe, else its decimal string). */
function anyValue(v: unknown, where: string, depth = 0): unknown {
  if (depth > 32) bad(where, 'values nested too deep');
  const value = obj(v);
  if (!value) return v === undefined || v === null ? null : bad(where, 'expected an AnyValue object');
  if ('stringValue' in value)
    return typeof value.stringValue === 'string' ? value.stringValue : bad(where, 'stringValue is not a string');
  if ('boolValue' in value)
    return typeof value.boolValue === 'boolean' ? value.boolValue : bad(where, 'boolValue is not a boolean');
  if ('intValue' in value) {
    const i = value.intValue;
    if (typeof i === 'number' && Number.isInteger(i)) return i;
    if (typeof i === 'string' && /^-?\d{1,20}$/.test(i)) return Number.isSafeInteger(Number(i)) ? Number(i) : i;
    return bad(where, 'intValue is not an integer');
  }
  if ('doubleValue' in value) {
    const d = value.doubleValue;
    return typeof d === 'number'
      ? d
      : typeof d === 'string' && ['NaN', 'Infinity', '-Infinity'].includes(d)
        ? d
        : bad(where, 'doubleValue is not a number');
  }
  if ('bytesValue' in value) {
    const b = value.bytesValue;
    return b instanceof Uint8Array
      ? Buffer.from(b).toString('base64')
      : typeof b === 'string'
        ? b
        : bad(where, 'bytesValue is not base64');
  }
  if ('arrayValue' in value)
    return list(obj(value.arrayValue)?.values, where).map((x) => anyValue(x, where, depth + 1));
  if ('kvlistValue' in value) return attributesOf(obj(value.kvlistValue)?.values, where, depth + 1);
  return null;
}

function attributesOf(v: unknown, where: string, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list(v, where)) {
    const pair = obj(kv) ?? bad(where, 'an attribute is not {key, value}');
    if (typeof pair.key !== 'string') bad(where, 'an attribute key is not a string');
    out[pair.key as string] = anyValue(pair.value, `${where}.${(pair.key as string).slice(0, 100)}`, depth);
  }
  return out;
}

/** The spans of an ExportTraceServiceRequest (JSON mapping shape), checked; 413 past `maxOperations`. */
export function normalizeRequest(request: unknown, limits: IngestLimits): OtlpSpan[] {
  const root = obj(request) ?? bad('body', 'expected an ExportTraceServiceRequest object');
  const spans: OtlpSpan[] = [];
  list(root.resourceSpans, 'resourceSpans').forEach((rs, i) => {
    const resourceSpans = obj(rs) ?? bad(`resourceSpans[${i}]`, 'expected an object');
    const resource = attributesOf(obj(resourceSpans.resource)?.attributes, `resourceSpans[${i}].resource`);
    list(resourceSpans.scopeSpans, `resourceSpans[${i}].scopeSpans`).forEach((ss, j) => {
      const scopeSpans = obj(ss) ?? bad(`resourceSpans[${i}].scopeSpans[${j}]`, 'expected an object');
      const scope = obj(scopeSpans.scope) ?? {};
      list(scopeSpans.spans, `resourceSpans[${i}].scopeSpans[${j}].spans`).forEach((s, k) => {
        const where = `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]`;
        if (spans.length >= limits.maxOperations)
          throw new PayloadTooLargeError(`More than ${limits.maxOperations} spans in one request.`);
        const span = obj(s) ?? bad(where, 'expected an object');
        const traceId = idOf(span.traceId, 16, `${where}.traceId`) ?? bad(where, 'traceId is required');
        const spanId = idOf(span.spanId, 8, `${where}.spanId`) ?? bad(where, 'spanId is required');
        const startNs =
          nanosOf(span.startTimeUnixNano, `${where}.startTimeUnixNano`) ?? bad(where, 'startTimeUnixNano is required');
        const status = obj(span.status) ?? {};
        if (span.name !== undefined && typeof span.name !== 'string') bad(where, 'name is not a string');
        spans.push({
          traceId,
          spanId,
          parentSpanId: idOf(span.parentSpanId, 8, `${where}.parentSpanId`),
          name: (span.name as string | undefined) || 'span',
          kind: typeof span.kind === 'number' ? span.kind : 0,
          startNs,
          endNs: nanosOf(span.endTimeUnixNano, `${where}.endTimeUnixNano`),
          attributes: attributesOf(span.attributes, `${where}.attributes`),
          events: list(span.events, `${where}.events`).map((e, n) => {
            const event = obj(e) ?? bad(`${where}.events[${n}]`, 'expected an object');
            return {
              name: typeof event.name === 'string' ? event.name : '',
              timeNs: nanosOf(event.timeUnixNano, `${where}.events[${n}].timeUnixNano`) ?? startNs,
              attributes: attributesOf(event.attributes, `${where}.events[${n}].attributes`),
            };
          }),
          status: {
            code: typeof status.code === 'number' ? status.code : 0,
            message: typeof status.message === 'string' ? status.message : '',
          },
          resource,
          scope: {
            name: typeof scope.name === 'string' ? scope.name : undefined,
            version: typeof scope.version === 'string' ? scope.version : undefined,
          },
        });
      });
    });
  });
  const invalid = unstorable(
    spans.map((s) => ({ ...s, startNs: null, endNs: null, events: s.events.map((e) => ({ ...e, timeNs: null })) })),
  );
  if (invalid) bad('body', invalid);
  return spans;
}

/** LangSmith's run id of an OTEL span id (langsmith's `getUuidFromOtelSpanId`). */
export function runIdOfSpan(spanId: string): string {
  const hex = spanId.padStart(16, '0');
  return `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4)}`;
}

const RUN_ID_OF_SPAN = /^00000000-0000-0000-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RUN_TYPES = new Set(['llm', 'chain', 'tool', 'retriever', 'embedding', 'prompt', 'parser']);

function isoOf(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString();
}

/** A dotted order segment at microsecond precision: `20240102T030405678901Z<run id>`. */
function segmentOf(ns: bigint, id: string): string {
  const iso = isoOf(ns);
  const micros = String((ns / 1000n) % 1_000_000n).padStart(6, '0');
  const date = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}`;
  return `${date}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}${micros}Z${id}`;
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
function runOf(span: OtlpSpan, project: string | null): RunFields & { parent_run_id: string | null } {
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
    ...(typeof sessionId === 'string' && UUID.test(sessionId)
      ? { session_id: sessionId }
      : { session_name: typeof sessionName === 'string' && sessionName ? sessionName : project }),
    ...(typeof reference === 'string' && UUID.test(reference) ? { reference_example_id: reference } : {}),
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

/**
 * The creates of an export's spans. Within the export, each span's dotted order runs from the
 * topmost ancestor the export holds; that ancestor is the trace's root (trace id its id) when it
 * has no parent, else a provisional root to be attached once its parent is stored.
 */
export function spansToOperations(spans: OtlpSpan[], project: string | null): OtlpSpansRequest {
  const runs = new Map<
    string,
    { fields: RunFields & { parent_run_id: string | null }; startNs: bigint; otelTrace: string }
  >();
  for (const span of spans)
    runs.set(runIdOfSpan(span.spanId), {
      fields: runOf(span, project),
      startNs: span.startNs,
      otelTrace: span.traceId,
    });

  const placed = new Map<string, { trace: string; dotted: string }>();
  const place = (id: string): { trace: string; dotted: string } => {
    const done = placed.get(id);
    if (done) return done;
    // Walk up to the topmost ancestor in this export, then place downwards (no recursion: a
    // hostile chain can be as long as the span limit).
    const chain: string[] = [];
    const seen = new Set<string>();
    let at: string | null = id;
    while (at && runs.has(at) && !placed.has(at)) {
      if (seen.has(at)) throw new UnprocessableError(`span ${at}: its parents form a cycle.`);
      seen.add(at);
      chain.push(at);
      const parent: string | null = runs.get(at)!.fields.parent_run_id;
      if (parent && runs.get(parent)?.otelTrace !== runs.get(at)!.otelTrace && runs.has(parent)) {
        throw new UnprocessableError(`span ${at}: its parent is in another trace.`);
      }
      at = parent;
    }
    let above = at ? placed.get(at) : undefined;
    for (const runId of chain.reverse()) {
      const run = runs.get(runId)!;
      const segment = segmentOf(run.startNs, runId);
      above = above ? { trace: above.trace, dotted: `${above.dotted}.${segment}` } : { trace: runId, dotted: segment };
      placed.set(runId, above);
    }
    return placed.get(id)!;
  };

  const operations: RunOperation[] = [];
  for (const [id, run] of runs) {
    const { trace, dotted } = place(id);
    const fields: Record<string, unknown> = { ...run.fields, trace_id: trace, dotted_order: dotted };
    if (fields.parent_run_id === null) delete fields.parent_run_id;
    operations.push(validateOperation('create', fields, `span ${id}`));
  }
  return { operations, otelTraceIds: [...new Set([...runs.values()].map((r) => r.otelTrace))].sort() };
}
