import { describe, expect, it } from 'vitest';
import { mergeFields, mergeInto, type RunFields } from './run-ops.js';

const run = (fields: Record<string, unknown>) => ({ id: 'r', ...fields }) as unknown as RunFields;

describe('mergeFields / mergeInto', () => {
  it('lays later fields over earlier ones, extra one level down and its metadata key by key, changing no argument', () => {
    const create = run({ name: 'agent', extra: { runtime: { lang: 'js' }, metadata: { a: 1, b: 1 } } });
    const update = run({ end_time: 't', extra: { metadata: { b: 2, c: 3 } } });
    const frozen = JSON.stringify([create, update]);
    const merged = mergeFields(create, update) as unknown as Record<string, any>;
    expect(merged).toEqual({
      id: 'r',
      name: 'agent',
      end_time: 't',
      extra: { runtime: { lang: 'js' }, metadata: { a: 1, b: 2, c: 3 } },
    });
    expect(JSON.stringify([create, update])).toBe(frozen);
    // A metadata that is no object replaces; one left out keeps what was there.
    expect((mergeFields(create, run({ extra: { metadata: 'x' } })) as any).extra.metadata).toBe('x');
    expect((mergeFields(create, run({ extra: { other: 1 } })) as any).extra).toEqual({
      runtime: { lang: 'js' },
      metadata: { a: 1, b: 1 },
      other: 1,
    });
  });

  it("folds a request's many operations of one run in place, each costing only its own size", () => {
    // 1,000 operations (a request's most) of one run, each with 200 metadata keys of its own: the
    // fold copied the merged metadata at every step (a hundred million key copies, over a minute
    // of one event loop, past this test's limit) before it merged in place.
    const ops = Array.from({ length: 1_000 }, (_, i) =>
      run({ extra: { metadata: Object.fromEntries(Array.from({ length: 200 }, (_, k) => [`k${i}_${k}`, k])) } }),
    );
    const first = ops[0]!;
    let folded: RunFields | null = null;
    for (const op of ops) folded = mergeInto((folded ?? {}) as Record<string, unknown>, op);
    const metadata = (folded as any).extra.metadata as Record<string, number>;
    expect(Object.keys(metadata)).toHaveLength(200_000);
    expect(metadata.k999_199).toBe(199);
    // The operations themselves are left as they came.
    expect(Object.keys((first as any).extra.metadata)).toHaveLength(200);
  });

  it('keeps a __proto__ key as the data it is (JSON keeps it as an ordinary key)', () => {
    const create = JSON.parse('{"id":"r","extra":{"metadata":{"a":1,"__proto__":{"y":2}},"__proto__":{"x":1}}}');
    const update = JSON.parse('{"id":"r","__proto__":{"z":3},"extra":{"metadata":{"b":2,"__proto__":{"y":3}}}}');
    const merged = mergeFields(create, update) as unknown as Record<string, any>;
    expect(JSON.stringify(merged)).toBe(
      '{"id":"r","extra":{"metadata":{"a":1,"__proto__":{"y":3},"b":2},"__proto__":{"x":1}},"__proto__":{"z":3}}',
    );
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(merged.extra.metadata)).toBe(Object.prototype);
  });
});
