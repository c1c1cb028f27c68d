import { createReadStream } from 'node:fs';
import { lstat, mkdir, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import path from 'node:path';
import { extract, list } from 'tar';
import { ArchivePolicy, isInside } from './archive-policy.js';
import { SourceFetchError } from './exec-tool.js';

export interface ExtractTarballOptions {
  /** The .tar.gz file (the caller resolved it, e.g. with `uploadFilePath`). */
  archive: string;
  /** Where to extract; must be missing or empty. */
  dir: string;
  signal?: AbortSignal;
  /** Largest uncompressed archive accepted (a gzip bomb stops here); default 4 GiB. */
  maxUncompressedBytes?: number;
}

export interface ExtractedTarball {
  /** The source root: `dir`, or its only entry when the archive holds a single top-level directory. */
  root: string;
  /** How many members the archive listed. */
  entries: number;
}

const DEFAULT_MAX_UNCOMPRESSED = 4 * 1024 ** 3;

/**
 * Extracts an uploaded source tarball safely, with the `tar` package (no shell-out, no
 * GNU-only flags):
 * 1. the decompressed size is measured first (a gzip bomb stops before anything is written);
 * 2. every entry header is read and checked by the ArchivePolicy (absolute names, `..`,
 *    devices and FIFOs, symlinks resolving outside by the archive's own links, hard links to
 *    anything but a file of the archive): one problem refuses the whole archive before a byte is
 *    written;
 * 3. extraction checks each entry against the policy again, never writes through a symlink,
 *    replaces rather than writes into existing files, keeps no owner and drops setuid, setgid
 *    and sticky bits; any warning from `tar` fails it;
 * 4. the extracted tree is walked and every symlink resolved by its real path on disk: one that
 *    leads outside `dir`, or any entry that is not a file, directory or symlink, fails it.
 * Throws SourceFetchError with a message for the user on a bad archive.
 */
export async function extractTarball(options: ExtractTarballOptions): Promise<ExtractedTarball> {
  const { archive, signal } = options;
  const dir = path.resolve(options.dir);
  const isFile = await stat(archive).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) throw new SourceFetchError('The source tarball file is missing.');
  await mkdir(dir, { recursive: true });
  if ((await readdir(dir)).length) throw new Error(`tarball extraction target ${dir} is not empty`);

  // A few KB of gzip can expand to terabytes: measure before anything is written.
  const limit = options.maxUncompressedBytes ?? DEFAULT_MAX_UNCOMPRESSED;
  if ((await uncompressedSize(archive, limit, signal)) > limit) {
    throw new SourceFetchError(
      `The source tarball was refused: it expands to more than ${Math.round(limit / 1024 ** 2)} MB.`,
    );
  }

  const listing = new ArchivePolicy(limit);
  await readArchive(
    'listing',
    () =>
      list({
        file: archive,
        strict: true,
        maxDecompressionRatio: Number.POSITIVE_INFINITY,
        onReadEntry: (entry) => void listing.admit(entry),
      }),
    signal,
  );
  const refused = ArchivePolicy.describe(listing.finish());
  if (refused) throw new SourceFetchError(refused);

  const extraction = new ArchivePolicy(limit);
  await readArchive(
    'extraction',
    () =>
      extract({
        file: archive,
        cwd: dir,
        strict: true,
        // The size was measured above against an absolute limit; a ratio alone refuses honest sparse files.
        maxDecompressionRatio: Number.POSITIVE_INFINITY,
        preserveOwner: false,
        unlink: true,
        filter: (_path, entry) => {
          if (!('type' in entry) || !extraction.admit(entry)) return false;
          // No setuid, setgid or sticky bits in a build tree.
          if (entry.mode) entry.mode &= 0o777;
          return true;
        },
      }),
    signal,
  );
  const problems = [...extraction.finish(), ...(await unsafeEntries(dir))];
  const unsafe = ArchivePolicy.describe(problems);
  if (unsafe) throw new SourceFetchError(unsafe);

  const top = await readdir(dir);
  const only = top.length === 1 ? path.join(dir, top[0]!) : null;
  const root = only && (await lstat(only)).isDirectory() ? only : dir;
  return { root, entries: listing.entries };
}

/** Runs one pass of `tar` over the archive; its errors (strict: every warning is one) become messages for the user. */
async function readArchive(what: string, pass: () => Promise<void>, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  try {
    await pass();
  } catch (err) {
    const detail = err instanceof Error ? err.message.split('\n')[0] : String(err);
    // An entry `tar` refused to write (e.g. through a symlink) is a refusal; anything else is a broken archive.
    const entryError =
      what === 'extraction' && /^TAR_(ENTRY|SYMLINK)/.test(String((err as { code?: unknown }).code ?? ''));
    throw new SourceFetchError(
      entryError
        ? `The source tarball was refused (${what}: ${detail}).`
        : `The source tarball is not a valid .tar.gz archive (${what}: ${detail}).`,
    );
  }
  signal?.throwIfAborted();
}

/**
 * Resolved by real path on disk: symlinks leading outside `root` (dangling ones by their
 * existing part), and entries that are neither files, directories nor symlinks.
 */
async function unsafeEntries(root: string): Promise<string[]> {
  const realRoot = await realpath(root);
  const problems: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(root, full);
      if (entry.isSymbolicLink()) {
        const target = await readlink(full);
        const real = await realTarget(full, target);
        if (real === null || !isInside(realRoot, real))
          problems.push(`symlink '${rel}' points outside the archive (${target})`);
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

/**
 * Where a symlink really leads. A dangling one: the real path of its directory joined with the
 * target; null (refused) when that target is absolute or climbs (`..`), since what it would
 * climb from cannot be known.
 */
async function realTarget(link: string, target: string): Promise<string | null> {
  try {
    return await realpath(link);
  } catch {
    if (path.isAbsolute(target) || target.split('/').includes('..')) return null;
    return path.join(await realpath(path.dirname(link)), target);
  }
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
