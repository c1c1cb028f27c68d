import { createReadStream } from 'node:fs';
import { lstat, mkdir, readdir, readlink, stat } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import path from 'node:path';
import { runTool, SourceFetchError, ToolError } from './exec-tool.js';

export interface ExtractTarballOptions {
  /** The .tar.gz file (the caller resolved it, e.g. with `uploadFilePath`). */
  archive: string;
  /** Where to extract; must be missing or empty. */
  dir: string;
  signal?: AbortSignal;
  /** Per tar command; default 10 minutes. */
  timeoutMs?: number;
  /** Largest uncompressed archive accepted (a gzip bomb stops here); default 4 GiB. */
  maxUncompressedBytes?: number;
}

export interface ExtractedTarball {
  /** The source root: `dir`, or its only entry when the archive holds a single top-level directory. */
  root: string;
  /** How many members the archive listed. */
  entries: number;
}

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_UNCOMPRESSED = 4 * 1024 ** 3;
const SHOWN_PROBLEMS = 5;

/**
 * Extracts an uploaded source tarball safely, with Debian's GNU tar:
 * 1. the member names are listed raw (`-P`) first, and an archive with any absolute name or
 *    `..` component is refused before anything is written;
 * 2. extraction runs with `--no-same-owner --no-same-permissions` into an empty directory (GNU
 *    tar also never writes through a symlink the same archive created: it extracts symlinks
 *    with absolute or `..` targets last);
 * 3. the extracted tree is walked: a symlink that resolves outside `dir`, or any entry that is
 *    not a file, directory or symlink (device, fifo, socket), fails the extraction.
 * Throws SourceFetchError with a message for the user on a bad archive.
 */
export async function extractTarball(options: ExtractTarballOptions): Promise<ExtractedTarball> {
  const { archive, signal } = options;
  const dir = path.resolve(options.dir);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const isFile = await stat(archive).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) throw new SourceFetchError('The source tarball file is missing.');
  await mkdir(dir, { recursive: true });
  if ((await readdir(dir)).length) throw new Error(`tarball extraction target ${dir} is not empty`);

  const tar = async (args: string[], what: string) => {
    try {
      return await runTool('tar', args, { signal, timeoutMs });
    } catch (err) {
      if (err instanceof ToolError && err.timedOut) throw new SourceFetchError(`The source tarball ${what} timed out after ${Math.round(timeoutMs / 1000)} s.`);
      if (err instanceof ToolError && !err.aborted) {
        const detail = err.stderr.trim().split('\n').filter(Boolean).slice(0, 3).join('; ');
        throw new SourceFetchError(`The source tarball is not a valid .tar.gz archive (${what}: ${detail || `exit code ${err.exitCode}`}).`);
      }
      throw err;
    }
  };

  // A few KB of gzip can expand to terabytes: measure before anything is written.
  const limit = options.maxUncompressedBytes ?? DEFAULT_MAX_UNCOMPRESSED;
  if ((await uncompressedSize(archive, limit, signal)) > limit) {
    throw new SourceFetchError(`The source tarball was refused: it expands to more than ${Math.round(limit / 1024 ** 2)} MB.`);
  }

  // GNU tar escapes control characters in listings (`\n`), so one line is one member and an
  // escaped name cannot fake a `/` or a `..` component.
  const { stdout } = await tar(['--list', '--gzip', '--absolute-names', '--quoting-style=escape', '--file', archive], 'listing');
  const names = stdout.split('\n').filter((n) => n.length > 0);
  const escaping = names.filter((n) => n.startsWith('/') || n.split('/').includes('..'));
  if (escaping.length) {
    throw new SourceFetchError(
      `The source tarball was refused: ${escaping.length} entr${escaping.length === 1 ? 'y points' : 'ies point'} outside its directory ` +
        `(${escaping.slice(0, SHOWN_PROBLEMS).map((n) => `'${n}'`).join(', ')}${escaping.length > SHOWN_PROBLEMS ? ', …' : ''}).`,
    );
  }

  await tar(
    ['--extract', '--gzip', '--file', archive, '--directory', dir, '--no-same-owner', '--no-same-permissions', '--warning=no-unknown-keyword'],
    'extraction',
  );
  const problems = await unsafeEntries(dir);
  if (problems.length) {
    throw new SourceFetchError(
      `The source tarball was refused: ${problems.slice(0, SHOWN_PROBLEMS).join('; ')}${problems.length > SHOWN_PROBLEMS ? '; …' : ''}.`,
    );
  }

  const top = await readdir(dir);
  const only = top.length === 1 ? path.join(dir, top[0]!) : null;
  const root = only && (await lstat(only)).isDirectory() ? only : dir;
  return { root, entries: names.length };
}

/** Symlinks leading outside `root`, and entries that are neither files, directories nor symlinks. */
async function unsafeEntries(root: string): Promise<string[]> {
  const problems: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(root, full);
      if (entry.isSymbolicLink()) {
        // Every link is checked lexically against its own directory, so a chain of links
        // stays inside when each of its links does.
        const target = await readlink(full);
        if (!isInside(root, path.resolve(path.dirname(full), target))) problems.push(`symlink '${rel}' points outside the archive (${target})`);
      } else if (entry.isDirectory()) {
        await walk(full);
      } else if (!entry.isFile()) {
        problems.push(`'${rel}' is not a regular file, directory or symlink`);
      }
    }
  };
  await walk(root);
  return problems;
}

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * The size of the archive's decompressed stream, read until it passes `limit` (then `limit + 1`
 * is enough of an answer). Corrupt gzip is left for tar to report.
 */
async function uncompressedSize(archive: string, limit: number, signal?: AbortSignal): Promise<number> {
  let total = 0;
  const gunzip = createGunzip();
  const input = createReadStream(archive, { signal });
  input.pipe(gunzip);
  try {
    for await (const chunk of gunzip) {
      total += (chunk as Buffer).length;
      if (total > limit) break;
    }
  } catch {
    return 0;
  } finally {
    input.destroy();
    gunzip.destroy();
  }
  return total;
}
