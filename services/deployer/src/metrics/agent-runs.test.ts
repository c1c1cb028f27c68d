import { describe, expect, it } from 'vitest';
import { countOf, histogramQuantile, MAX_PER_READ, parseRunCounts, RUN_DURATION_BOUNDS_MS } from './agent-runs.js';

const fields = 1 + 4 + RUN_DURATION_BOUNDS_MS.length + 1;

describe('countOf (what a deployed app wrote)', () => {
  it('takes non-negative integers, capped; anything else is 0', () => {
    expect(countOf('7')).toBe(7);
    expect(countOf('0')).toBe(0);
    expect(countOf(String(MAX_PER_READ * 5))).toBe(MAX_PER_READ);
    for (const bad of [null, undefined, '', '-3', '1.5', '1e9', ' 4', 'NaN', '9'.repeat(40), 12])
      expect(countOf(bad)).toBe(0);
  });
});

describe('parseRunCounts', () => {
  it('reads started, outcomes and duration buckets in field order; null when all are zero or absent', () => {
    const values: Array<string | null> = Array.from({ length: fields }, () => null);
    expect(parseRunCounts(values)).toBeNull();
    expect(parseRunCounts([])).toBeNull();
    values[0] = '4';
    values[1] = '3';
    values[2] = 'garbage';
    values[3] = '1';
    values[5 + 2] = '4';
    const counts = parseRunCounts(values)!;
    expect(counts.started).toBe(4);
    expect(counts.outcomes).toEqual({ success: 3, error: 0, interrupted: 1, timeout: 0 });
    expect(counts.durations).toHaveLength(RUN_DURATION_BOUNDS_MS.length + 1);
    expect(counts.durations[2]).toBe(4);
  });
});

describe('histogramQuantile', () => {
  it('interpolates inside the bucket holding the rank; the open bucket gives its lower bound', () => {
    expect(histogramQuantile([], 0.5)).toBeNull();
    expect(histogramQuantile([0, 0, 0], 0.5)).toBeNull();
    // 4 runs in (100, 250]: the median is half-way through it.
    expect(histogramQuantile([0, 0, 4], 0.5)).toBe(175);
    // 2 runs at most 50 ms, 2 in (50, 100]: rank 2 ends the first bucket.
    expect(histogramQuantile([2, 2], 0.5)).toBe(50);
    const open = Array.from({ length: RUN_DURATION_BOUNDS_MS.length + 1 }, () => 0);
    open[RUN_DURATION_BOUNDS_MS.length] = 3;
    expect(histogramQuantile(open, 0.5)).toBe(RUN_DURATION_BOUNDS_MS.at(-1));
  });
});
