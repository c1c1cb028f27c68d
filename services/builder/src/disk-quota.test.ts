import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskQuota, DiskQuotaExceeded, diskUsage } from './disk-quota.js';

const root = mkdtempSync(path.join(tmpdir(), 'slipway-disk-quota-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const MB = 1024 * 1024;

function dirWith(name: string, bytes: number): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'data.bin'), Buffer.alloc(bytes, 1));
  return dir;
}

describe('diskUsage', () => {
  it('sums the trees it is given and counts a missing one as 0', async () => {
    const a = dirWith('a', 2 * MB);
    const b = dirWith('b', 1 * MB);
    const used = await diskUsage([a, b, path.join(root, 'missing')]);
    expect(used).toBeGreaterThanOrEqual(3 * MB);
    expect(used).toBeLessThan(4 * MB);
    expect(await diskUsage([path.join(root, 'missing')])).toBe(0);
  });
});

describe('DiskQuota', () => {
  it('check throws DiskQuotaExceeded with what was used past the limit, and passes under it', async () => {
    const dir = dirWith('check', 3 * MB);
    await expect(new DiskQuota([dir], 4 * MB).check()).resolves.toBeUndefined();
    const err = await new DiskQuota([dir], 2 * MB).check().catch((e) => e);
    expect(err).toBeInstanceOf(DiskQuotaExceeded);
    expect(err.limitBytes).toBe(2 * MB);
    expect(err.usedBytes).toBeGreaterThan(3 * MB - 1);
    expect(err.message).toMatch(/^[34] MB used of a 2 MB quota$/);
  });

  it('watch aborts its signal once the trees grow past the limit, and not before', async () => {
    const dir = dirWith('watch', 1 * MB);
    const watch = new DiskQuota([dir], 2 * MB, 20).watch();
    try {
      await new Promise((r) => setTimeout(r, 100));
      expect(watch.signal.aborted).toBe(false);
      writeFileSync(path.join(dir, 'more.bin'), Buffer.alloc(2 * MB, 1));
      await new Promise<void>((resolve) => watch.signal.addEventListener('abort', () => resolve(), { once: true }));
      expect(watch.signal.reason).toBeInstanceOf(DiskQuotaExceeded);
    } finally {
      watch.stop();
    }
  });
});
