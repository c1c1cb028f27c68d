import { mkdir, readdir } from 'node:fs/promises';
import { runTool, SourceFetchError, ToolError, type ToolResult } from './exec-tool.js';

/**
 * Credentials for a clone, as one HTTP header (e.g. `Authorization: Basic …`), made by a
 * repohost provider's `cloneAuth()`. Git gets it as `http.extraHeader` through
 * GIT_CONFIG_COUNT/KEY/VALUE — the environment form of `git -c`, so the token is neither on a
 * command line (`ps` shows those) nor written into the clone's `.git/config`.
 */
export interface GitAuth {
  header: string;
}

export interface GitFetchOptions {
  /** `https://…`, `http://…` or `file:///…`. */
  url: string;
  /** Branch, tag, or full/short commit sha; null or empty = the remote's default branch. */
  ref?: string | null;
  /** A pinned commit (full sha): fetched instead of `ref` (a retry builds what the first attempt resolved). */
  commit?: string | null;
  /** Where the working tree goes; must be missing or empty. */
  dir: string;
  auth?: GitAuth | null;
  /**
   * The only transport git may use (GIT_ALLOW_PROTOCOL), for the clone and anything it
   * leads to (submodules, alternates); redirects are never followed either way.
   */
  allowProtocol?: 'https' | 'http' | 'file';
  signal?: AbortSignal;
  /** Per git command; default 10 minutes. */
  timeoutMs?: number;
}

export interface FetchedGit {
  dir: string;
  /** The resolved commit (`git rev-parse HEAD`). */
  commit: string;
  /** Its message (at most MAX_COMMIT_MESSAGE characters) and its author's name, as the repository says. */
  message: string;
  author: string;
}

/** A commit message is kept to this many characters (a repository's text, shown in the API and the console). */
export const MAX_COMMIT_MESSAGE = 2_000;

const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i;
const SHORT_SHA = /^[0-9a-f]{7,39}$/i;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;

/** A URL for messages: userinfo (which may hold a token) is dropped. */
export function displayGitUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '';
      u.password = '';
    }
    return u.toString();
  } catch {
    return url.replace(/\/\/[^/@]*@/, '//');
  }
}

/**
 * Fetches `url` at `ref` into `dir`: a shallow single-branch clone of a branch or tag, or a
 * depth-1 fetch of one commit when `ref` is a full sha or `commit` is pinned (servers that
 * refuse unadvertised objects get a full fetch and a checkout instead). A short sha that is
 * not also a branch or tag name needs the history, so it is a full fetch too. Git runs through
 * execFile only, never prompts, and stops on `signal` or its timeout. Failures a user can fix
 * throw SourceFetchError with a message naming the url and the ref.
 */
export async function fetchGitRepository(options: GitFetchOptions): Promise<FetchedGit> {
  const url = checkUrl(options.url);
  const display = displayGitUrl(url);
  const ref = normalizeRef(options.ref);
  const pinned = options.commit?.trim() || null;
  if (pinned && !FULL_SHA.test(pinned))
    throw new SourceFetchError(`repo_commit_sha '${pinned}' is not a full commit sha.`);
  const dir = options.dir;
  await mkdir(dir, { recursive: true });
  if ((await readdir(dir)).length) throw new Error(`git fetch target ${dir} is not empty`);

  const git = new Git(url, display, options);
  const sha = pinned ?? (ref && FULL_SHA.test(ref) ? ref : null);
  if (sha) {
    await git.fetchCommit(sha);
  } else if (ref && SHORT_SHA.test(ref) && !(await git.isRemoteRef(ref))) {
    await git.fetchEverything();
    await git.checkout(ref, `Commit or ref '${ref}' not found in ${display}.`);
  } else {
    await git.cloneRef(ref);
  }
  const commit = (await git.run(['rev-parse', 'HEAD'], 'Git rev-parse')).stdout.trim();
  if (sha && commit.toLowerCase() !== sha.toLowerCase()) {
    throw new SourceFetchError(`Fetched commit ${commit} of ${display}, not the requested ${sha}.`);
  }
  return { dir, commit, ...(await describeHead(git)) };
}

/**
 * HEAD's author name and message. Only said, never needed: a commit git cannot describe within
 * its output bound (a hostile repository's giant message) reads as empty, and the build goes on.
 */
async function describeHead(git: Git): Promise<{ message: string; author: string }> {
  let described: string;
  try {
    // Author name, then the raw message, split by a NUL (which neither can hold).
    described = (await git.run(['log', '-1', '--no-show-signature', '--format=%an%x00%B', 'HEAD'], 'Git log')).stdout;
  } catch {
    return { message: '', author: '' };
  }
  const split = described.indexOf('\0');
  return {
    author: (split < 0 ? '' : described.slice(0, split)).trim().slice(0, 200),
    message: (split < 0 ? described : described.slice(split + 1)).trim().slice(0, MAX_COMMIT_MESSAGE),
  };
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SourceFetchError(`'${displayGitUrl(url)}' is not a repository URL (expected https:// or file://).`);
  }
  if (!['https:', 'http:', 'file:'].includes(parsed.protocol)) {
    throw new SourceFetchError(
      `Repository URL scheme '${parsed.protocol}' is not supported (use https:// or file://).`,
    );
  }
  return url;
}

/** `refs/heads/x` and `refs/tags/x` name the same thing as `x` for a clone; anything git would not accept as a ref is refused. */
function normalizeRef(ref: string | null | undefined): string | null {
  const r = ref?.trim().replace(/^refs\/(heads|tags)\//, '') || null;
  if (r === null) return null;
  // check-ref-format's rules, plus no leading '-' (never mistaken for an option).
  if (/^-|\.\.|[\s~^:?*[\\\x00-\x1f\x7f]|@\{|\/\/|\/$|\.lock$|^\/|\.$/.test(r)) {
    throw new SourceFetchError(`'${r}' is not a valid git ref.`);
  }
  return r;
}

class Git {
  private readonly isFile: boolean;

  constructor(
    private readonly url: string,
    private readonly display: string,
    private readonly options: GitFetchOptions,
  ) {
    this.isFile = url.startsWith('file:');
  }

  /** Runs git in the target dir (or without a cwd for clone/ls-remote). */
  async run(args: string[], what: string, cwd: string | undefined = this.options.dir): Promise<ToolResult> {
    const env: Record<string, string> = {
      GIT_TERMINAL_PROMPT: '0',
      GCM_INTERACTIVE: 'never',
      GIT_ASKPASS: '',
      SSH_ASKPASS: '',
    };
    if (this.options.allowProtocol) env.GIT_ALLOW_PROTOCOL = this.options.allowProtocol;
    if (this.options.auth?.header) {
      Object.assign(env, {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: this.options.auth.header,
      });
    }
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    try {
      // file:// repositories sit under the operator's local repos root and may belong to another
      // user, which git refuses to read unless told it is safe (the serving upload-pack
      // inherits this command-line config).
      const safe = this.isFile ? ['-c', 'safe.directory=*'] : [];
      // No redirects: a host must not send the clone (and its credentials) somewhere else.
      return await runTool(
        'git',
        ['-c', 'advice.detachedHead=false', '-c', 'http.followRedirects=false', ...safe, ...args],
        { cwd, env, signal: this.options.signal, timeoutMs },
      );
    } catch (err) {
      if (err instanceof ToolError && err.timedOut) {
        throw new SourceFetchError(`${what} of ${this.display} timed out after ${Math.round(timeoutMs / 1000)} s.`);
      }
      throw err;
    }
  }

  async cloneRef(ref: string | null): Promise<void> {
    const branch = ref ? ['--branch', ref] : [];
    try {
      await this.run(
        ['clone', '--quiet', '--depth', '1', '--single-branch', ...branch, '--', this.url, this.options.dir],
        'Git clone',
        undefined,
      );
    } catch (err) {
      throw this.explain(err, ref);
    }
  }

  /** True when `name` is a branch or tag of the remote (a hex-looking name can be either). */
  async isRemoteRef(name: string): Promise<boolean> {
    try {
      const { stdout } = await this.run(
        ['ls-remote', '--heads', '--tags', '--', this.url, name],
        'Git ls-remote',
        undefined,
      );
      return stdout.trim().length > 0;
    } catch (err) {
      throw this.explain(err, name);
    }
  }

  async fetchCommit(sha: string): Promise<void> {
    await this.init();
    // Over file:// git runs the serving upload-pack itself, so these settings reach it; most
    // hosts (GitHub, Gitea) allow fetching a reachable sha anyway.
    const allowSha = this.isFile
      ? ['-c', 'uploadpack.allowReachableSHA1InWant=true', '-c', 'uploadpack.allowAnySHA1InWant=true']
      : [];
    try {
      await this.run([...allowSha, 'fetch', '--quiet', '--depth', '1', '--no-tags', 'origin', sha], 'Git fetch');
      await this.run(['checkout', '--quiet', '--detach', 'FETCH_HEAD'], 'Git checkout');
      return;
    } catch (err) {
      if (err instanceof ToolError && err.aborted) throw err;
      if (err instanceof SourceFetchError) throw err;
      // The server would not serve that object by sha: take everything and look for it.
    }
    await this.fetchEverything();
    await this.checkout(sha, `Commit ${sha} not found in ${this.display}.`);
  }

  async fetchEverything(): Promise<void> {
    await this.init();
    try {
      await this.run(
        ['fetch', '--quiet', '--no-tags', 'origin', '+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*'],
        'Git fetch',
      );
    } catch (err) {
      throw this.explain(err, null);
    }
  }

  async checkout(rev: string, notFound: string): Promise<void> {
    try {
      const { stdout } = await this.run(
        ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`],
        'Git rev-parse',
      );
      await this.run(['checkout', '--quiet', '--detach', stdout.trim()], 'Git checkout');
    } catch (err) {
      if (err instanceof ToolError && !err.aborted) throw new SourceFetchError(notFound);
      throw err;
    }
  }

  private initialized = false;

  private async init(): Promise<void> {
    if (this.initialized) return;
    await this.run(['init', '--quiet', this.options.dir], 'Git init', undefined);
    await this.run(['remote', 'add', 'origin', this.url], 'Git remote add');
    this.initialized = true;
  }

  /** Turns git's stderr into a sentence a user can act on. */
  private explain(err: unknown, ref: string | null): unknown {
    if (!(err instanceof ToolError) || err.aborted) return err;
    const text = err.stderr;
    const fatal = (text.match(/^(?:fatal|error): .*$/m)?.[0] ?? text.trim().split('\n').at(-1) ?? '')
      .split(this.url)
      .join(this.display)
      .replace(/\s+/g, ' ')
      .trim();
    if (ref && /Remote branch .* not found|couldn't find remote ref/i.test(text)) {
      return new SourceFetchError(`Branch or tag '${ref}' not found in ${this.display}.`);
    }
    if (
      /Could not resolve host|Failed to connect|Connection refused|Connection timed out|Network is unreachable/i.test(
        text,
      )
    ) {
      return new SourceFetchError(`Could not reach ${this.display}: ${fatal}`);
    }
    if (/Authentication failed|could not read Username|terminal prompts disabled|returned error: 40[13]/i.test(text)) {
      return new SourceFetchError(`Access to ${this.display} was denied (missing or wrong credentials): ${fatal}`);
    }
    if (/Repository not found|does not appear to be a git repository|returned error: 404|not found/i.test(text)) {
      return new SourceFetchError(`Repository ${this.display} not found or not accessible: ${fatal}`);
    }
    return new SourceFetchError(
      `Git could not fetch ${this.display}${ref ? ` at '${ref}'` : ''}: ${fatal || `exit code ${err.exitCode}`}`,
    );
  }
}
