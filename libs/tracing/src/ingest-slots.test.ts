import { describe, expect, it } from 'vitest';
import { TooManyRequestsError } from '@slipway/domain';
import { IngestSlots } from './ingest-slots.js';

describe('ingest slots', () => {
  it(
    'refuses a writer past its limit with a 429 to retry in a second, leaving other writers alone, ' +
      'and frees slots on failure too',
    async () => {
      const slots = new IngestSlots(2);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const a1 = slots.run('a', () => held);
      const a2 = slots.run('a', () => held);
      const refused = await slots.run('a', async () => 'never').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TooManyRequestsError);
      expect((refused as TooManyRequestsError).retryAfterSeconds).toBe(1);
      await expect(slots.run('b', async () => 'b')).resolves.toBe('b');
      release();
      await Promise.all([a1, a2]);
      await expect(slots.run('a', async () => Promise.reject(new Error('write failed')))).rejects.toThrow(
        'write failed',
      );
      await expect(Promise.all([slots.run('a', async () => 1), slots.run('a', async () => 2)])).resolves.toEqual([
        1, 2,
      ]);
    },
  );
});
