import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceFetchError } from './exec-tool.js';
import { extractTarball } from './tarball.js';

let tmp: string;
let n = 0;
const fresh = (name: string) => path.join(tmp, `${name}-${++n}`);

/** Makes a .tar.gz of `files` (path → content) with GNU tar; `extra` adds tar options (e.g. --transform). */
function makeTarball(files: Record<string, string>, extra: string[] = [], members = Object.keys(files)): string {
  const src = fresh('src');
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(src, file)), { recursive: true });
    writeFileSync(path.join(src, file), content);
  }
  const archive = `${fresh('archive')}.tar.gz`;
  execFileSync('tar', ['-czPf', archive, '-C', src, ...extra, ...members]);
  return archive;
}

beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'slipway-tarball-'));
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('extractTarball', () => {
  it('uses the single top-level directory as the root', async () => {
    const archive = makeTarball({ 'my-agent/package.json': '{}', 'my-agent/src/index.js': 'x' });
    const dir = fresh('out');
    const { root, entries } = await extractTarball({ archive, dir });
    expect(root).toBe(path.join(dir, 'my-agent'));
    expect(readFileSync(path.join(root, 'src/index.js'), 'utf8')).toBe('x');
    expect(entries).toBe(2);
  });

  it('uses the extraction directory when files sit at the top', async () => {
    const archive = makeTarball({ 'package.json': '{}', 'langgraph.json': '{}', 'src/index.js': 'x' });
    const dir = fresh('out');
    expect((await extractTarball({ archive, dir })).root).toBe(dir);
    expect(existsSync(path.join(dir, 'langgraph.json'))).toBe(true);
  });

  it('refuses an entry with a .. component before writing anything', async () => {
    const archive = makeTarball({ 'app/a.js': 'a', 'evil.txt': 'pwned' }, ['--transform', 's,^evil.txt,../evil.txt,']);
    const dir = fresh('out');
    await expect(extractTarball({ archive, dir })).rejects.toThrow(
      new SourceFetchError("The source tarball was refused: 1 entry points outside its directory ('../evil.txt')."),
    );
    expect(existsSync(path.join(path.dirname(dir), 'evil.txt'))).toBe(false);
    expect(existsSync(path.join(dir, 'app'))).toBe(false);
  });

  it('refuses absolute entries', async () => {
    const outside = path.join(tmp, 'absolute-target.txt');
    const archive = makeTarball({ 'app/a.js': 'a', 'evil.txt': 'pwned' }, ['--transform', `s,^evil.txt,${outside},`]);
    await expect(extractTarball({ archive, dir: fresh('out') })).rejects.toThrow(/refused: 1 entry points outside its directory/);
    expect(existsSync(outside)).toBe(false);
  });

  it('refuses a symlink that leads outside, and keeps one that stays inside', async () => {
    const src = fresh('links');
    mkdirSync(path.join(src, 'app'), { recursive: true });
    writeFileSync(path.join(src, 'app/real.js'), 'r');
    symlinkSync('real.js', path.join(src, 'app/alias.js'));
    const good = `${fresh('good')}.tar.gz`;
    execFileSync('tar', ['-czf', good, '-C', src, 'app']);
    const dir = fresh('out');
    const { root } = await extractTarball({ archive: good, dir });
    expect(lstatSync(path.join(root, 'alias.js')).isSymbolicLink()).toBe(true);

    symlinkSync('../../../etc/passwd', path.join(src, 'app/passwd'));
    const bad = `${fresh('bad')}.tar.gz`;
    execFileSync('tar', ['-czf', bad, '-C', src, 'app']);
    await expect(extractTarball({ archive: bad, dir: fresh('out') })).rejects.toThrow(
      "The source tarball was refused: symlink 'app/passwd' points outside the archive (../../../etc/passwd).",
    );
  });

  it('says when the file is not a gzip tarball, or is missing', async () => {
    const junk = fresh('junk');
    writeFileSync(junk, 'this is not a tarball');
    await expect(extractTarball({ archive: junk, dir: fresh('out') })).rejects.toThrow(/^The source tarball is not a valid \.tar\.gz archive/);
    await expect(extractTarball({ archive: fresh('missing'), dir: fresh('out') })).rejects.toThrow('The source tarball file is missing.');
  });
});

describe('extractTarball size limit', () => {
  it('refuses an archive that expands past the limit before writing anything (gzip bomb)', async () => {
    // 4 MB of zeros compresses to a few KB.
    const archive = makeTarball({ 'app/zeros.bin': '\0'.repeat(4 * 1024 * 1024) });
    const dir = fresh('bomb');
    await expect(extractTarball({ archive, dir, maxUncompressedBytes: 1024 * 1024 })).rejects.toThrow(/expands to more than 1 MB/);
    expect(readdirSync(dir)).toEqual([]);
    const ok = await extractTarball({ archive, dir: fresh('roomy'), maxUncompressedBytes: 8 * 1024 * 1024 });
    expect(ok.entries).toBeGreaterThan(0);
  });
});
