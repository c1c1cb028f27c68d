import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  MAX_BRANCHES,
  ProviderError,
  type CloneAuth,
  type CloneProtocol,
  type RepohostProvider,
  type RepositoryBranch,
  type RepositoryEntry,
} from './types.js';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const GIT_TIMEOUT_MS = 10_000;
/** How many repositories are inspected at once: each costs two short git processes. */
const PARALLEL = 8;

export interface LocalProviderOptions {
  /** Absolute directory whose direct children are the repositories. */
  root: string;
  /** Every entry's `owner`: the integration's name. */
  owner: string;
  /**
   * When set, `root` (symlinks resolved) must lie under it, checked again on every listing:
   * a symlink swapped after the integration was created must not widen what it exposes.
   */
  allowedRoot?: string;
}

/** True when `child` is `parent` or lies below it (both already absolute and resolved). */
export function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** A stable positive 31-bit id for a repository path (seed 2.9 wants an integer). */
export function localRepositoryId(absolutePath: string): number {
  const n = createHash('sha256').update(absolutePath).digest().readUInt32BE(0);
  return (n % 0x7fffffff) + 1;
}

/** `git` with an explicit git dir: never discovers a repository above the one we name. */
async function git(gitDir: string, args: string[]): Promise<string> {
  // safe.directory: the operator placed these repositories under the allowed root; their
  // owner may differ from the server's user, which git would otherwise refuse to read.
  const { stdout } = await run('git', ['-c', 'safe.directory=*', `--git-dir=${gitDir}`, ...args], {
    timeout: GIT_TIMEOUT_MS,
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' },
  });
  return stdout.trim();
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

/**
 * The git dir of the repository at `dir` (its `.git`, or `dir` itself when bare), or null when
 * `dir` is not a repository. The cheap file checks first keep git out of ordinary directories.
 */
async function gitDirOf(dir: string): Promise<string | null> {
  const dotGit = path.join(dir, '.git');
  let candidate: string;
  if (await exists(dotGit)) candidate = dotGit;
  else if ((await exists(path.join(dir, 'HEAD'))) && (await exists(path.join(dir, 'objects')))) candidate = dir;
  else return null;
  try {
    await git(candidate, ['rev-parse', '--git-dir']);
    return candidate;
  } catch {
    return null;
  }
}

/** The branch HEAD points at; `HEAD` itself for a detached HEAD (clone then takes what is checked out). */
async function headBranch(gitDir: string): Promise<string> {
  try {
    return (await git(gitDir, ['symbolic-ref', '--short', 'HEAD'])) || 'HEAD';
  } catch {
    return 'HEAD';
  }
}

/**
 * Repositories on this machine (docs/api.md, Integrations, `local`): every git repository directly under
 * `root`, bare or not. For air-gapped installs and tests; clones need no credentials.
 */
export class LocalProvider implements RepohostProvider {
  constructor(private readonly options: LocalProviderOptions) {}

  async listRepositories(): Promise<RepositoryEntry[]> {
    const root = await this.resolvedRoot();
    const entries = await readdir(root, { withFileTypes: true });
    const candidates = entries.filter((e) => e.isDirectory() || e.isSymbolicLink()).map((e) => e.name);
    const found: RepositoryEntry[] = [];
    for (let i = 0; i < candidates.length; i += PARALLEL) {
      const batch = await Promise.all(candidates.slice(i, i + PARALLEL).map((name) => this.inspect(root, name)));
      for (const entry of batch) if (entry) found.push(entry);
    }
    return found.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The repository's branches, most recently committed first. `repoUrl` must be a `file://`
   * URL of a repository inside the root (the same check as a clone), so no path escapes it.
   */
  async listBranches(repoUrl: string): Promise<RepositoryBranch[]> {
    await this.checkCloneUrl(repoUrl);
    const gitDir = await gitDirOf(fileURLToPath(repoUrl));
    if (!gitDir) throw new ProviderError(`${repoUrl} is not a git repository.`);
    let out: string;
    try {
      out = await git(gitDir, [
        'for-each-ref',
        '--sort=-committerdate',
        `--count=${MAX_BRANCHES}`,
        '--format=%(refname:lstrip=2)%09%(objectname)',
        'refs/heads',
      ]);
    } catch (err) {
      throw new ProviderError(
        `git could not list the branches of ${repoUrl}: ${(err as Error).message.split('\n')[0]}`,
      );
    }
    return out
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [name, sha] = line.split('\t');
        return { name: name!, commit_sha: sha! };
      });
  }

  async cloneAuth(): Promise<CloneAuth | null> {
    return null;
  }

  /**
   * Only `file://` URLs of repositories inside this integration's root (symlinks resolved), so a
   * deployment cannot clone another tenant's checkout or any other path on the machine.
   */
  async checkCloneUrl(url: string): Promise<CloneProtocol> {
    let target: string;
    try {
      if (!url.startsWith('file://')) throw new Error('not file://');
      target = await realpath(fileURLToPath(url));
    } catch {
      throw new ProviderError(
        `Clones of a local integration must be file:// URLs of existing repositories under ${this.options.root}.`,
      );
    }
    const root = await this.resolvedRoot();
    if (!isWithin(root, target) || target === root) {
      throw new ProviderError(`The repository ${target} is outside this local integration's root ${root}.`);
    }
    return 'file';
  }

  /** `root` with symlinks resolved, checked against the allowed root. */
  async resolvedRoot(): Promise<string> {
    let root: string;
    try {
      root = await realpath(this.options.root);
      if (!(await stat(root)).isDirectory()) throw new ProviderError(`${this.options.root} is not a directory.`);
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      throw new ProviderError(
        `Cannot read the repositories directory ${this.options.root} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`,
      );
    }
    if (this.options.allowedRoot !== undefined) {
      const allowed = await realpath(this.options.allowedRoot).catch(() => path.resolve(this.options.allowedRoot!));
      if (!isWithin(allowed, root)) {
        throw new ProviderError(`${this.options.root} resolves to ${root}, outside the allowed root ${allowed}.`);
      }
    }
    return root;
  }

  private async inspect(root: string, name: string): Promise<RepositoryEntry | null> {
    const dir = path.join(root, name);
    try {
      const real = await realpath(dir);
      // A symlinked entry counts only while it stays inside the allowed tree.
      if (real !== dir && !isWithin(root, real) && this.options.allowedRoot !== undefined) {
        const allowed = await realpath(this.options.allowedRoot);
        if (!isWithin(allowed, real)) return null;
      }
      if (!(await stat(real)).isDirectory()) return null;
    } catch {
      return null; // vanished or dangling symlink
    }
    const gitDir = await gitDirOf(dir);
    if (!gitDir) return null;
    return {
      id: localRepositoryId(dir),
      name,
      owner: this.options.owner,
      url: `file://${dir}`,
      default_branch: await headBranch(gitDir),
    };
  }
}
