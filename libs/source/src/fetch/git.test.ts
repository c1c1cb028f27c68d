import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceFetchError } from './exec-tool.js';
import { displayGitUrl, fetchGitRepository, MAX_COMMIT_MESSAGE } from './git.js';

/** Real repositories in a temp dir, made with the git CLI. */
let tmp: string;
let url: string;
const shas: Record<string, string> = {};
let n = 0;
const target = () => path.join(tmp, `checkout-${++n}`);

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();

const commitFile = (repo: string, file: string, content: string, message: string) => {
  writeFileSync(path.join(repo, file), content);
  git(repo, 'add', file);
  git(repo, 'commit', '-q', '-m', message);
  return git(repo, 'rev-parse', 'HEAD');
};

beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'slipway-git-'));
  const repo = path.join(tmp, 'origin');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  shas.first = commitFile(repo, 'version.txt', 'one', 'first');
  shas.second = commitFile(repo, 'version.txt', 'two', 'second');
  git(repo, 'tag', 'v2');
  shas.main = commitFile(repo, 'version.txt', 'three', 'third');
  git(repo, 'checkout', '-q', '-b', 'feature');
  shas.feature = commitFile(repo, 'version.txt', 'feature', 'feature work');
  git(repo, 'checkout', '-q', 'main');
  url = `file://${repo}`;
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const read = (dir: string) => readFileSync(path.join(dir, 'version.txt'), 'utf8');

describe('fetchGitRepository', () => {
  it('clones a branch shallowly and reports its commit', async () => {
    const dir = target();
    const fetched = await fetchGitRepository({ url, ref: 'feature', dir });
    expect(fetched).toEqual({ dir, commit: shas.feature, message: 'feature work', author: 'Test' });
    expect(read(dir)).toBe('feature');
    expect(git(dir, 'rev-parse', '--is-shallow-repository')).toBe('true');
  });

  it("reports the commit's whole message, cut at MAX_COMMIT_MESSAGE, and its author's name", async () => {
    const repo = path.join(tmp, 'described');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, 'f'), 'x');
    git(repo, 'add', 'f');
    execFileSync(
      'git',
      [
        '-c',
        'user.name=Ada Lovelace',
        '-c',
        'user.email=ada@example.com',
        'commit',
        '-q',
        '-m',
        'Fix the planner',
        '-m',
        'It looped.\nTwice.',
      ],
      { cwd: repo },
    );
    expect(await fetchGitRepository({ url: `file://${repo}`, ref: 'main', dir: target() })).toMatchObject({
      message: 'Fix the planner\n\nIt looped.\nTwice.',
      author: 'Ada Lovelace',
    });
    writeFileSync(path.join(repo, 'f'), 'y');
    git(repo, 'commit', '-q', '-a', '-m', 'z'.repeat(MAX_COMMIT_MESSAGE + 500));
    expect((await fetchGitRepository({ url: `file://${repo}`, ref: 'main', dir: target() })).message).toBe(
      'z'.repeat(MAX_COMMIT_MESSAGE),
    );
  });

  it('clones the default branch when no ref is given, and accepts refs/heads/ names', async () => {
    expect((await fetchGitRepository({ url, ref: null, dir: target() })).commit).toBe(shas.main);
    expect((await fetchGitRepository({ url, ref: 'refs/heads/main', dir: target() })).commit).toBe(shas.main);
  });

  it('clones a tag', async () => {
    const dir = target();
    expect((await fetchGitRepository({ url, ref: 'v2', dir })).commit).toBe(shas.second);
    expect(read(dir)).toBe('two');
  });

  it('fetches one commit by its full sha', async () => {
    const dir = target();
    expect((await fetchGitRepository({ url, ref: shas.first, dir })).commit).toBe(shas.first);
    expect(read(dir)).toBe('one');
    expect(git(dir, 'rev-parse', '--is-shallow-repository')).toBe('true');
  });

  it('builds the pinned commit, not the branch tip, when repo_commit_sha is set', async () => {
    const dir = target();
    expect((await fetchGitRepository({ url, ref: 'main', commit: shas.second, dir })).commit).toBe(shas.second);
    expect(read(dir)).toBe('two');
  });

  it('resolves a short sha through a full fetch', async () => {
    const dir = target();
    expect((await fetchGitRepository({ url, ref: shas.first.slice(0, 9), dir })).commit).toBe(shas.first);
    expect(read(dir)).toBe('one');
  });

  it('says which branch is missing from which repository', async () => {
    await expect(fetchGitRepository({ url, ref: 'does-not-exist', dir: target() })).rejects.toThrow(
      new SourceFetchError(`Branch or tag 'does-not-exist' not found in ${url}.`),
    );
  });

  it('says when a commit is not in the repository', async () => {
    const missing = 'a'.repeat(40);
    await expect(fetchGitRepository({ url, ref: missing, dir: target() })).rejects.toThrow(
      `Commit ${missing} not found in ${url}.`,
    );
    await expect(fetchGitRepository({ url, ref: 'abcdef1234', dir: target() })).rejects.toThrow(
      `Commit or ref 'abcdef1234' not found in ${url}.`,
    );
  });

  it('says when the repository does not exist', async () => {
    await expect(fetchGitRepository({ url: `file://${tmp}/nothing-here`, ref: 'main', dir: target() })).rejects.toThrow(
      /not found or not accessible/,
    );
  });

  it('refuses other URL schemes and refs that are not refs', async () => {
    await expect(
      fetchGitRepository({ url: 'ext::sh -c touch% /tmp/pwned', ref: 'main', dir: target() }),
    ).rejects.toThrow(/not supported/);
    await expect(fetchGitRepository({ url: '/just/a/path', ref: 'main', dir: target() })).rejects.toThrow(
      /not a repository URL/,
    );
    await expect(fetchGitRepository({ url, ref: '--upload-pack=touch /tmp/x', dir: target() })).rejects.toThrow(
      /not a valid git ref/,
    );
    await expect(fetchGitRepository({ url, ref: 'main', commit: 'abc123', dir: target() })).rejects.toThrow(
      /not a full commit sha/,
    );
  });

  it('drops credentials from URLs it shows', () => {
    expect(displayGitUrl('https://user:s3cret@git.example/acme/agent.git')).toBe('https://git.example/acme/agent.git');
  });
});

describe('fetchGitRepository over http', () => {
  let server: Server;
  let base: string;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      // /hang never answers: for the timeout and abort tests.
      if (req.url?.startsWith('/hang')) return;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="test"' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('sends the auth header with every request and never prompts', async () => {
    const header = 'Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9rZW4=';
    await expect(
      fetchGitRepository({ url: `${base}/acme/agent.git`, ref: 'main', dir: target(), auth: { header } }),
    ).rejects.toThrow(
      new SourceFetchError(
        `Access to ${base}/acme/agent.git was denied (missing or wrong credentials): fatal: ` +
          `could not read Username for '${base}': terminal prompts disabled`,
      ),
    );
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((h) => h.authorization === 'Basic eC1hY2Nlc3MtdG9rZW46dG9rZW4=')).toBe(true);
  });

  it('stops on its timeout', async () => {
    await expect(
      fetchGitRepository({ url: `${base}/hang/repo.git`, ref: 'main', dir: target(), timeoutMs: 500 }),
    ).rejects.toThrow(/^Git clone of .* timed out after 1 s\.$/);
  });

  it('stops when the signal aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort('interrupted'), 300);
    const error = await fetchGitRepository({
      url: `${base}/hang/repo.git`,
      ref: 'main',
      dir: target(),
      signal: controller.signal,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(SourceFetchError);
    expect(controller.signal.aborted).toBe(true);
  });
});
