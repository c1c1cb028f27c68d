import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { laneOf, WAITING_FILES } from '../lanes.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('test lanes', () => {
  it('names only test files that exist (a renamed file would leave the waiting lane silently)', () => {
    expect(WAITING_FILES.filter((f) => !existsSync(path.join(ROOT, f)) || !f.endsWith('.test.ts'))).toEqual([]);
  });

  it('reads SLIPWAY_TEST_LANE strictly', () => {
    expect(laneOf(undefined)).toBeNull();
    expect(laneOf('')).toBeNull();
    expect(laneOf('waiting')).toBe('waiting');
    expect(() => laneOf('wait')).toThrow(/must be "main" or "waiting"/);
  });
});
