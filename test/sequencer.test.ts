import { describe, expect, it } from 'vitest';
import { interleave } from './sequencer.js';

describe('interleave (test/sequencer.ts)', () => {
  const waiting = (f: string) => f.startsWith('w');

  it('puts each mostly-waiting file after one that computes, keeping both orders', () => {
    expect(interleave(['c1', 'w1', 'w2', 'c2', 'c3', 'w3'], waiting)).toEqual(['c1', 'w1', 'c2', 'w2', 'c3', 'w3']);
  });

  it('leaves the waiting files it cannot pair at the end, and loses none', () => {
    const out = interleave(['w1', 'w2', 'w3', 'c1'], waiting);
    expect(out).toEqual(['c1', 'w1', 'w2', 'w3']);
    expect(interleave(['c1', 'c2'], waiting)).toEqual(['c1', 'c2']);
    expect(interleave([], waiting)).toEqual([]);
  });
});
