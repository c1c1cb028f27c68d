import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { craftTarball, type CraftedEntry } from '../../../../test/support/crafted-tarball.js';
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
      new SourceFetchError("The source tarball was refused: '../evil.txt' points outside its directory."),
    );
    expect(existsSync(path.join(path.dirname(dir), 'evil.txt'))).toBe(false);
    expect(existsSync(path.join(dir, 'app'))).toBe(false);
  });

  it('refuses absolute entries', async () => {
    const outside = path.join(tmp, 'absolute-target.txt');
    const archive = makeTarball({ 'app/a.js': 'a', 'evil.txt': 'pwned' }, ['--transform', `s,^evil.txt,${outside},`]);
    await expect(extractTarball({ archive, dir: fresh('out') })).rejects.toThrow(
      `The source tarball was refused: '${outside}' points outside its directory.`,
    );
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
    await expect(extractTarball({ archive: junk, dir: fresh('out') })).rejects.toThrow(
      /^The source tarball is not a valid \.tar\.gz archive/,
    );
    await expect(extractTarball({ archive: fresh('missing'), dir: fresh('out') })).rejects.toThrow(
      'The source tarball file is missing.',
    );
  });
});

describe('extractTarball size limit', () => {
  it('refuses an archive that expands past the limit before writing anything (gzip bomb)', async () => {
    // 4 MB of zeros compresses to a few KB.
    const archive = makeTarball({ 'app/zeros.bin': '\0'.repeat(4 * 1024 * 1024) });
    const dir = fresh('bomb');
    await expect(extractTarball({ archive, dir, maxUncompressedBytes: 1024 * 1024 })).rejects.toThrow(
      /expands to more than 1 MB/,
    );
    expect(readdirSync(dir)).toEqual([]);
    const ok = await extractTarball({ archive, dir: fresh('roomy'), maxUncompressedBytes: 8 * 1024 * 1024 });
    expect(ok.entries).toBeGreaterThan(0);
  });
});

describe('extractTarball against crafted archives', () => {
  const crafted = (entries: CraftedEntry[]) => {
    const archive = `${fresh('crafted')}.tar.gz`;
    writeFileSync(archive, craftTarball(entries));
    return archive;
  };
  /** The extraction target sits in its own directory, so anything written beside it shows. */
  const target = () => {
    const box = fresh('box');
    mkdirSync(box);
    return { box, dir: path.join(box, 'out') };
  };

  it.each([
    [
      'up -> . then esc -> up/..',
      [
        { path: 'up', type: 'SymbolicLink', linkpath: '.' },
        { path: 'esc', type: 'SymbolicLink', linkpath: 'up/..' },
      ],
    ],
    [
      'esc -> up/.. first, up -> . after (a later entry turns an earlier link into an escape)',
      [
        { path: 'esc', type: 'SymbolicLink', linkpath: 'up/..' },
        { path: 'up', type: 'SymbolicLink', linkpath: '.' },
      ],
    ],
    [
      'a chain: a -> b/c/../.., b/c -> ..',
      [
        { path: 'b', type: 'Directory' },
        { path: 'b/c', type: 'SymbolicLink', linkpath: '..' },
        { path: 'a', type: 'SymbolicLink', linkpath: 'b/c/../..' },
      ],
    ],
  ] as Array<[string, CraftedEntry[]]>)(
    'the symlink escape %s is refused by real path, before anything is written',
    async (_case, links) => {
      const { box, dir } = target();
      const archive = crafted([
        { path: 'app/index.js', body: 'x' },
        ...links,
        { path: 'esc/pwned.txt', body: 'pwned' },
      ]);
      await expect(extractTarball({ archive, dir })).rejects.toThrow(
        /^The source tarball was refused: .*symlink '(esc|a)' points outside the archive/,
      );
      expect(readdirSync(box)).toEqual(['out']);
      expect(readdirSync(dir)).toEqual([]);
    },
  );

  it('refuses writing through a symlink, even one that stays inside', async () => {
    const archive = crafted([
      { path: 'app', type: 'Directory' },
      { path: 'link', type: 'SymbolicLink', linkpath: 'app' },
      { path: 'link/x.js', body: 'x' },
    ]);
    await expect(extractTarball({ archive, dir: target().dir })).rejects.toThrow(
      "The source tarball was refused: 'link/x.js' is written through the symlink 'link'.",
    );
  });

  it('refuses hard links to anything outside or not a file of the archive; keeps one to a file of its own', async () => {
    for (const [linkpath, extra] of [
      ['/etc/passwd', []],
      ['../../etc/passwd', []],
      ['etc/passwd', [{ path: 'etc', type: 'SymbolicLink', linkpath: '/etc' }]],
      ['missing.txt', []],
    ] as Array<[string, CraftedEntry[]]>) {
      const archive = crafted([
        ...extra,
        { path: 'app/a.txt', body: 'a' },
        { path: 'app/h.txt', type: 'Link', linkpath },
      ]);
      await expect(extractTarball({ archive, dir: target().dir }), linkpath).rejects.toThrow(
        `hard link 'app/h.txt' does not point to a file of the archive (${linkpath})`,
      );
    }
    const good = crafted([
      { path: 'app/a.txt', body: 'shared' },
      { path: 'app/h.txt', type: 'Link', linkpath: 'app/a.txt' },
    ]);
    const { root } = await extractTarball({ archive: good, dir: target().dir });
    expect(readFileSync(path.join(root, 'h.txt'), 'utf8')).toBe('shared');
  });

  it('refuses devices and FIFOs', async () => {
    const archive = crafted([
      { path: 'app/a.txt', body: 'a' },
      { path: 'app/null', type: 'CharacterDevice' },
      { path: 'app/disk', type: 'BlockDevice' },
      { path: 'app/pipe', type: 'FIFO' },
    ]);
    const { dir } = target();
    await expect(extractTarball({ archive, dir })).rejects.toThrow(
      "The source tarball was refused: 'app/null' is a character device; only files, directories and links are allowed; " +
        "'app/disk' is a block device; only files, directories and links are allowed; 'app/pipe' is a FIFO; " +
        'only files, directories and links are allowed.',
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it('drops setuid, setgid and sticky bits and keeps no owner from the archive', async () => {
    const archive = crafted([{ path: 'app/run.sh', body: '#!/bin/sh\n', mode: 0o6755 }]);
    const { root } = await extractTarball({ archive, dir: target().dir });
    const mode = lstatSync(path.join(root, 'run.sh')).mode & 0o7777;
    expect(mode & 0o7000).toBe(0);
    expect(mode & 0o100).toBe(0o100);
  });

  it('keeps links that stay inside; a link created through another link is refused', async () => {
    const archive = crafted([
      { path: 'app/lib/real.js', body: 'r' },
      { path: 'app/alias.js', type: 'SymbolicLink', linkpath: 'lib/real.js' },
      { path: 'app/fine', type: 'SymbolicLink', linkpath: './lib/../lib/real.js' },
    ]);
    const { root } = await extractTarball({ archive, dir: target().dir });
    expect(readFileSync(path.join(root, 'alias.js'), 'utf8')).toBe('r');
    expect(readFileSync(path.join(root, 'fine'), 'utf8')).toBe('r');

    const chained = crafted([
      { path: 'app/lib/real.js', body: 'r' },
      { path: 'app/lib-link', type: 'SymbolicLink', linkpath: 'lib' },
      { path: 'app/alias.js', type: 'SymbolicLink', linkpath: 'lib-link/real.js' },
    ]);
    await expect(extractTarball({ archive: chained, dir: target().dir })).rejects.toThrow(
      'The source tarball was refused (extraction: TAR_SYMLINK_ERROR: Cannot extract through symbolic link).',
    );
  });
});
