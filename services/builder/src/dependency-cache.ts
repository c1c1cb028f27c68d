import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { findLockfile } from './package-manager.js';

const run = promisify(execFile);

/** Bumped when what an entry holds or how it is keyed changes: older entries are then never read. */
const FORMAT = 'slipway-deps-1';
/** npm runs these of the project's own package.json during an install: their output may depend on any file of the source. */
const OWN_INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare', 'prepublish'];

/** Whether an install directory's dependencies may be reused, and under which key. */
export type DependencyKey = { key: string; lockfile: string } | { key: null; reason: string };

/**
 * `<dataDir>/cache/deps/<deployment>`: the installed dependencies (node_modules) of a
 * deployment's last successful build, one entry per install, so that its next build reuses them
 * when nothing that decides them changed (a code-only redeploy) instead of installing again.
 *
 * - An entry is keyed by the digest of what decides an install: the lockfile, package.json and
 *   the directory's .npmrc (bytes), the install command, and the Node version and platform. No
 *   lockfile, or install scripts of the project's own package.json (whose output may depend on
 *   any source file), and nothing is reused.
 * - Per deployment: one deployment's builds never see another's entries, so a build (its
 *   install scripts run the deployment's own code) cannot poison another deployment's, and no
 *   tenant's node_modules reach another tenant.
 * - Only the builder reads and writes entries (a directory of the control plane, 0700, never
 *   mounted into a build's sandbox); it copies the tree right after the install step, before
 *   the build command or the graph check ran, and only from a real directory of the build (no
 *   link followed). A later step of the same build cannot change what the next build gets.
 * - After a successful build only the entries it used are kept; teardown removes the directory.
 */
export class DependencyCache {
  constructor(readonly root: string) {}

  static of(dataDir: string, deploymentId: string): DependencyCache {
    return new DependencyCache(path.join(dataDir, 'cache', 'deps', deploymentId));
  }

  /** The key of the install of `dir` by `command`, or why its result is not reusable. */
  static async keyOf(dir: string, command: string): Promise<DependencyKey> {
    const lock = await findLockfile(dir);
    if (!lock) return { key: null, reason: 'no lockfile' };
    const pkgText = await readFile(path.join(dir, 'package.json'), 'utf8').catch(() => '');
    const scripts = (safeJson(pkgText) as { scripts?: Record<string, unknown> } | null)?.scripts ?? {};
    const own = OWN_INSTALL_SCRIPTS.filter((s) => typeof scripts[s] === 'string');
    if (own.length) return { key: null, reason: `package.json has install scripts (${own.join(', ')})` };
    return { key: await installKey(FORMAT, command, dir, [lock.file, 'package.json', '.npmrc']), lockfile: lock.file };
  }

  /**
   * Puts the entry's node_modules in place of `dir`'s (whatever was there goes, a link
   * included, never followed). False when there is no entry for `key`.
   */
  async restore(key: string, dir: string): Promise<boolean> {
    const entry = path.join(this.root, key);
    if (!(await isRealDirectory(entry))) return false;
    const target = path.join(dir, 'node_modules');
    await rm(target, { recursive: true, force: true });
    if (await isRealDirectory(path.join(entry, 'node_modules')))
      await copyTree(path.join(entry, 'node_modules'), target);
    return true;
  }

  /** Keeps `dir`'s node_modules (after its install step) under `key`; `dir` must be a real directory of the build. */
  async save(key: string, dir: string): Promise<void> {
    const entry = path.join(this.root, key);
    if (await isRealDirectory(entry)) return;
    const modules = path.join(dir, 'node_modules');
    // A link there (a step's doing) is never followed, and nothing is kept: nothing outside the
    // build is ever copied, and no entry stands for an install it does not hold. None at all: an
    // install without dependencies, kept as such.
    const found = await lstat(modules).catch(() => null);
    if (found && !found.isDirectory()) return;
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    const staging = path.join(this.root, `.${key}.${randomBytes(4).toString('hex')}.partial`);
    try {
      await mkdir(staging, { mode: 0o700 });
      if (found) await copyTree(modules, path.join(staging, 'node_modules'));
      await rename(staging, entry);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  /** Removes every entry but `keys` (and leftovers of interrupted saves). */
  async keepOnly(keys: ReadonlySet<string>): Promise<void> {
    const names = await readdir(this.root).catch(() => [] as string[]);
    await Promise.all(
      names.filter((n) => !keys.has(n)).map((n) => rm(path.join(this.root, n), { recursive: true, force: true })),
    );
  }
}

/**
 * The digest of what decides an install: `format` (an entry layout's version), the Node version
 * and platform, the install command, and the bytes of `files` in `dir` (a missing one counts as
 * missing). Shared by every cache of installed dependencies.
 */
export async function installKey(
  format: string,
  command: string,
  dir: string,
  files: readonly string[],
): Promise<string> {
  const hash = createHash('sha256').update(
    `${format}\0${process.version}\0${process.platform}-${process.arch}\0${command}\0`,
  );
  for (const file of files) {
    const bytes = await readFile(path.join(dir, file)).catch(() => null);
    hash.update(`${file}\0${bytes ? bytes.length : -1}\0`);
    if (bytes) hash.update(bytes);
  }
  return hash.digest('hex');
}

export async function isRealDirectory(p: string): Promise<boolean> {
  return (await lstat(p).catch(() => null))?.isDirectory() ?? false;
}

/** `cp -a`: links copied as links (never followed), modes and times kept; far faster than a copy walk in this process. */
export async function copyTree(from: string, to: string): Promise<void> {
  await run('cp', ['-a', '--reflink=auto', '--', from, to]);
}

/** Clears every group and other write bit under `dir`: its files may then be linked (linkTree) into trees others read. */
export async function sealTree(dir: string): Promise<void> {
  await run('chmod', ['-R', 'go-w', '--', dir]);
}

/**
 * `cp -al`: the same tree with new directories and hard links to `from`'s files, so nothing of
 * their contents is written again (a copy where `to` is on another file system). Only for a
 * tree whose files the process that reads `to` can never change: they keep their owner and mode.
 */
export async function linkTree(from: string, to: string): Promise<void> {
  try {
    await run('cp', ['-al', '--', from, to]);
  } catch {
    await rm(to, { recursive: true, force: true });
    await copyTree(from, to);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
