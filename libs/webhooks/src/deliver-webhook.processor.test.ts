import { describe, expect, it } from 'vitest';
import { JOB_CATALOG } from '@slipway/jobs';
import { webhookBackoff } from './deliver-webhook.processor.js';

describe('webhook retries', () => {
  it('double the wait each time, and at the default base span about a day', () => {
    const wait = webhookBackoff(5_000);
    expect([1, 2, 3, 4].map(wait)).toEqual([5_000, 10_000, 20_000, 40_000]);
    const attempts = JOB_CATALOG['deliver.webhook'].options.attempts!;
    let total = 0;
    for (let made = 1; made < attempts; made++) total += wait(made);
    expect(total / 3_600_000).toBeGreaterThan(20);
    expect(total / 3_600_000).toBeLessThan(30);
  });
});
