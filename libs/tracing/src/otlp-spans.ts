import { PayloadTooLargeError, UnprocessableError } from './errors.js';
import type { IngestLimits } from './limits.js';
import { unstorable } from './run-ops.js';

/**
 * The spans of an OTLP ExportTraceServiceRequest, read from its JSON mapping (the protobuf
 * encoding is decoded to the same shape first) and checked: ids, times and attribute values are
 * refused with the path of the field at fault, so a malformed span refuses the whole export.
 */

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
/** An object, not an array or bytes; null otherwise. */
export const obj = (v: unknown): Record<string, unknown> | null =>
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
