import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { secureDataDir } from './data-dir.js';

const root = mkdtempSync(path.join(tmpdir(), 'slipway-data-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o777;

describe('secureDataDir', () => {
  it('creates a missing data dir 0700', () => {
    const dir = path.join(root, 'fresh', 'data');
    secureDataDir(dir);
    expect(mode(dir)).toBe(0o700);
  });

  it('closes an open tree: the dir and its working dirs 0700, the key files 0600; other entries and links are left', () => {
    const dir = path.join(root, 'open');
    mkdirSync(path.join(dir, 'artifacts'), { recursive: true });
    mkdirSync(path.join(dir, 'uploads'));
    mkdirSync(path.join(dir, 'repos'));
    writeFileSync(path.join(dir, 'secrets.key'), 'k');
    writeFileSync(path.join(dir, 'bootstrap-api-key'), 'b');
    const elsewhere = path.join(root, 'elsewhere');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, path.join(dir, 'builds'));
    for (const p of [dir, path.join(dir, 'artifacts'), path.join(dir, 'uploads'), path.join(dir, 'repos'), elsewhere])
      chmodSync(p, 0o755);
    for (const f of ['secrets.key', 'bootstrap-api-key']) chmodSync(path.join(dir, f), 0o644);

    const tightened = secureDataDir(dir);
    expect(mode(dir)).toBe(0o700);
    expect(mode(path.join(dir, 'artifacts'))).toBe(0o700);
    expect(mode(path.join(dir, 'uploads'))).toBe(0o700);
    expect(mode(path.join(dir, 'secrets.key'))).toBe(0o600);
    expect(mode(path.join(dir, 'bootstrap-api-key'))).toBe(0o600);
    expect(mode(path.join(dir, 'repos'))).toBe(0o755);
    expect(mode(elsewhere)).toBe(0o755);
    expect(tightened).toHaveLength(5);
    expect(secureDataDir(dir)).toEqual([]);
  });
});
