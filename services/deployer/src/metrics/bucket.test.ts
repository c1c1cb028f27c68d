import { afterEach, describe, expect, it, vi } from 'vitest';
import { BucketAccumulator, quantile } from './bucket.js';

afterEach(() => vi.useRealTimers());

describe('quantile', () => {
  it('is the nearest-rank value; null for no values', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(sorted, 0.5)).toBe(50);
    expect(quantile(sorted, 0.95)).toBe(95);
    expect(quantile(sorted, 0.99)).toBe(99);
    expect(quantile([7], 0.99)).toBe(7);
    expect(quantile([], 0.5)).toBeNull();
  });
});

describe('BucketAccumulator', () => {
  it('hands over a bucket once it is over, with counts by status class, percentiles and summed samples', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const acc = new BucketAccumulator(10_000);
    for (let ms = 1; ms <= 10; ms++) acc.request('d1', 200, ms);
    acc.request('d1', 404, 50);
    acc.request('d1', 503, 60);
    acc.restart('d1', true);
    acc.restart('d1', false);
    acc.sample('d1', 'i0', { cpuPercent: 10, memoryBytes: 100 });
    acc.sample('d1', 'i1', { cpuPercent: null, memoryBytes: 50 });
    acc.sample('d1', 'i0', { cpuPercent: 20, memoryBytes: 150 });
    // Still open.
    expect(acc.takeEnded(Date.now())).toEqual([]);
    vi.setSystemTime(1_010_000);
    acc.request('d1', 200, 1);
    const [row, ...rest] = acc.takeEnded(Date.now());
    expect(rest).toEqual([]);
    expect(row).toMatchObject({
      deploymentId: 'd1',
      bucketAt: new Date(1_000_000),
      requests: 12,
      errors_4xx: 1,
      errors_5xx: 1,
      restarts: 2,
      oom_kills: 1,
      latency_p50_ms: 6,
      latency_p99_ms: 60,
      cpu_percent: 20,
      memory_bytes: 200,
    });
    // The request of the next bucket stays for later; a row put back comes out again first.
    acc.putBack([row!]);
    vi.setSystemTime(1_020_000);
    const next = acc.takeEnded(Date.now());
    expect(next.map((b) => [b.bucketAt.getTime(), b.requests])).toEqual([
      [1_000_000, 12],
      [1_010_000, 1],
    ]);
  });

  it('sums the agent-server runs read in a bucket: error and timeout are failed, the median from the summed histogram', () => {
    vi.useFakeTimers({ now: 2_000_000 });
    const acc = new BucketAccumulator(10_000);
    acc.runs('d1', {
      started: 3,
      outcomes: { success: 2, error: 0, interrupted: 1, timeout: 0 },
      durations: [0, 0, 3],
    });
    acc.runs('d1', {
      started: 1,
      outcomes: { success: 0, error: 1, interrupted: 0, timeout: 1 },
      durations: [0, 0, 1],
    });
    vi.setSystemTime(2_010_000);
    const [row] = acc.takeEnded(Date.now());
    expect(row).toMatchObject({
      requests: 0,
      runs_started: 4,
      runs_succeeded: 2,
      runs_failed: 2,
      run_duration_p50_ms: 175,
      latency_p50_ms: null,
    });
  });
});
