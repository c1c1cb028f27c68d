import { describe, expect, it } from 'vitest';
import { resolveResourceSpec } from './resource-spec.js';

describe('resolveResourceSpec: queue workers', () => {
  it('are off unless queue_min_scale is given, and the queue sizes follow the API ones', () => {
    const spec = resolveResourceSpec({ min_scale: 2, max_scale: 3, memory_mb: 300 }, 'dev');
    expect(spec).toMatchObject({ queue_enabled: false, queue_min_scale: 2, queue_max_scale: 3, queue_memory_mb: 300 });
  });

  it('are on when queue_min_scale is given, even as 0', () => {
    expect(resolveResourceSpec({ queue_min_scale: 2 }, 'dev').queue_enabled).toBe(true);
    expect(resolveResourceSpec({ queue_min_scale: 0 }, 'dev').queue_enabled).toBe(true);
  });

  it('follow queue_enabled when it is given: a spec read back and sent again keeps its mode', () => {
    const readBack = resolveResourceSpec({}, 'prod');
    expect(resolveResourceSpec(readBack, 'prod')).toEqual(readBack);
    expect(resolveResourceSpec({ queue_enabled: true }, 'dev')).toMatchObject({ queue_enabled: true, queue_min_scale: 1 });
  });
});
