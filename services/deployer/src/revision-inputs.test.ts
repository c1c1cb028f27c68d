import { describe, expect, it } from 'vitest';
import { instanceCount } from './revision-inputs.js';

describe('instanceCount (resource_spec scale)', () => {
  it('runs min_scale instances, at least one', () => {
    expect(instanceCount({ min_scale: 3, max_scale: 5 })).toBe(3);
    expect(instanceCount({ min_scale: 0 })).toBe(1);
    expect(instanceCount(null)).toBe(1);
    expect(instanceCount({})).toBe(1);
  });

  it('never more than max_scale', () => {
    expect(instanceCount({ min_scale: 4, max_scale: 2 })).toBe(2);
    expect(instanceCount({ min_scale: 2, max_scale: 2 })).toBe(2);
  });

  it('ignores a max_scale that is not a positive number', () => {
    expect(instanceCount({ min_scale: 2, max_scale: 0 })).toBe(2);
    expect(instanceCount({ min_scale: 2, max_scale: Number.NaN })).toBe(2);
  });
});
