import { describe, expect, it } from 'vitest';
import { DEFAULT_INGEST_LIMITS } from './limits.js';
import { spansToOperations } from './otlp.js';
import { runIdOfSpan } from './otlp-run.js';
import { normalizeRequest } from './otlp-spans.js';

const TRACE = 'ab'.repeat(16);
const now = BigInt(Date.now()) * 1_000_000n;
const hex = (n: number) => n.toString(16).padStart(16, '0');

/** An export (JSON mapping) of spans `n` with parents `parent(n)` (null: none). */
function exportOf(ids: number[], parent: (n: number) => number | null) {
  return {
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: ids.map((n) => ({
              traceId: TRACE,
              spanId: hex(n),
              ...(parent(n) === null ? {} : { parentSpanId: hex(parent(n)!) }),
              name: `s${n}`,
              startTimeUnixNano: String(now + BigInt(n) * 1000n),
            })),
          },
        ],
      },
    ],
  };
}

const operations = (body: unknown) =>
  spansToOperations(normalizeRequest(body, DEFAULT_INGEST_LIMITS), null).operations.map((o) => o.fields);

describe('spansToOperations', () => {
  it("maps ids as the langsmith client does, and places each span under its export's topmost ancestor", () => {
    expect(runIdOfSpan('0123456789abcdef')).toBe('00000000-0000-0000-0123-456789abcdef');
    // 1 is the root; 3's parent (2) is not in this export: 3 and 4 form a provisional piece.
    const fields = operations(exportOf([1, 3, 4, 5], (n) => ({ 1: null, 3: 2, 4: 3, 5: 1 })[n] ?? null));
    const byName = Object.fromEntries(fields.map((f) => [f.name, f]));
    expect(byName.s1).toMatchObject({ id: runIdOfSpan(hex(1)), trace_id: runIdOfSpan(hex(1)) });
    expect(byName.s1!.parent_run_id).toBeUndefined();
    expect(byName.s5).toMatchObject({ parent_run_id: runIdOfSpan(hex(1)), trace_id: runIdOfSpan(hex(1)) });
    expect(byName.s5!.dotted_order!.startsWith(`${byName.s1!.dotted_order}.`)).toBe(true);
    expect(byName.s3).toMatchObject({ parent_run_id: runIdOfSpan(hex(2)), trace_id: runIdOfSpan(hex(3)) });
    expect(byName.s3!.dotted_order!.split('.')).toHaveLength(1);
    expect(byName.s4).toMatchObject({
      trace_id: runIdOfSpan(hex(3)),
      dotted_order: expect.stringMatching(new RegExp(`^${byName.s3!.dotted_order}\\.`)),
    });
  });

  it('keeps microseconds in the dotted order', () => {
    const [f] = operations(exportOf([7], () => null));
    const micros = String(((now + 7000n) / 1000n) % 1_000_000n).padStart(6, '0');
    expect(f!.dotted_order).toMatch(new RegExp(`^\\d{8}T\\d{6}${micros}Z`));
  });

  it('refuses parents in a cycle', () => {
    expect(() => operations(exportOf([1, 2], (n) => (n === 1 ? 2 : 1)))).toThrow(/cycle/);
  });

  it('places a chain as deep as a run may be, and refuses one as long as the span limit without recursing', () => {
    const deep = Array.from({ length: 40 }, (_, i) => i + 1);
    const fields = operations(exportOf(deep, (n) => (n === 1 ? null : n - 1)));
    expect(fields.every((f) => f.trace_id === runIdOfSpan(hex(1)))).toBe(true);
    expect(fields.at(-1)!.dotted_order!.split('.')).toHaveLength(deep.length);
    const longest = Array.from({ length: DEFAULT_INGEST_LIMITS.maxOperations }, (_, i) => i + 1);
    expect(() => operations(exportOf(longest, (n) => (n === 1 ? null : n - 1)))).toThrow(/longer than 2560 characters/);
  });

  it('refuses more spans than the limit', () => {
    const ids = Array.from({ length: DEFAULT_INGEST_LIMITS.maxOperations + 1 }, (_, i) => i + 1);
    expect(() => operations(exportOf(ids, () => null))).toThrow(/More than/);
  });
});
