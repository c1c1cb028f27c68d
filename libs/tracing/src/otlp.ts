import type { Readable } from 'node:stream';
import { UnprocessableError, UnsupportedMediaTypeError } from './errors.js';
import type { IngestLimits } from './limits.js';
import { readBodyBytes, parseJson } from './body.js';
import { decodeExportTraceRequest } from './otlp-proto.js';
import { isoOf, runIdOfSpan, runOf } from './otlp-run.js';
import { normalizeRequest, type OtlpSpan } from './otlp-spans.js';
import { validateOperation, type RunFields, type RunOperation } from './run-ops.js';

/**
 * OTLP/HTTP trace export → run creates (docs/tracing.md, "OTLP"). A span is a run whose id is
 * LangSmith's UUID of its span id (`00000000-0000-0000-<16 hex>`), so the runs of a traceable
 * exported over OTEL keep the ids the langsmith client gave them; the trace id is the root
 * run's id, as in LangSmith.
 *
 * A span whose parent is not in the same export is written as a provisional root (its trace id
 * its own id, its parent id set): `SpanTreeRepository.attach` later moves its subtree under the
 * parent, whichever of the two arrives first.
 *
 * The export is read here and its spans placed in their traces; checking the spans is
 * `otlp-spans.ts`, and what run each span is `otlp-run.ts`.
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

/** A dotted order segment at microsecond precision: `20240102T030405678901Z<run id>`. */
function segmentOf(ns: bigint, id: string): string {
  const iso = isoOf(ns);
  const micros = String((ns / 1000n) % 1_000_000n).padStart(6, '0');
  const date = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}`;
  return `${date}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}${micros}Z${id}`;
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
