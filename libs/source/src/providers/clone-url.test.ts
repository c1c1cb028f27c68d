import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchGitRepository } from '../fetch/git.js';
import { GiteaProvider } from './gitea.provider.js';
import { GitHubProvider } from './github.provider.js';
import { LocalProvider } from './local.provider.js';

/**
 * Issue 8 item 4: clones stay on their provider's transport. Real repositories made with the
 * git CLI in a temp dir stand for two tenants' local roots.
 */
let tmp: string;
let root: string;
let other: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();

const repoAt = (dir: string) => {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'commit', '-q', '--allow-empty', '-m', 'first');
  return dir;
};

beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'slipway-clone-url-'));
  root = path.join(tmp, 'tenant-a');
  other = path.join(tmp, 'tenant-b');
  repoAt(path.join(root, 'agent'));
  repoAt(path.join(other, 'secret'));
  symlinkSync(path.join(other, 'secret'), path.join(root, 'link-out'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: Error) => err.message,
  );

describe('local', () => {
  const local = () => new LocalProvider({ root, owner: 'a', allowedRoot: tmp });

  it('clones file:// repositories inside its own root', async () => {
    expect(await local().checkCloneUrl(`file://${root}/agent`)).toBe('file');
  });

  it.each([
    ['another tenant’s checkout', () => `file://${other}/secret`],
    ['a path climbing out with ..', () => `file://${root}/../tenant-b/secret`],
    ['a symlink inside that leads outside', () => `file://${root}/link-out`],
    ['the root itself', () => `file://${root}`],
    ['an https URL', () => 'https://github.com/acme/agent.git'],
    ['a plain path', () => `${root}/agent`],
  ])('refuses %s', async (_case, url) => {
    expect(await refusal(local().checkCloneUrl(url()))).toMatch(
      /outside this local integration's root|must be file:\/\/ URLs/,
    );
  });
});

describe('gitea and github', () => {
  const gitea = new GiteaProvider({
    apiUrl: 'http://127.0.0.1:3000/api/v1',
    token: 't',
    outbound: { allowHosts: ['127.0.0.1'] },
  });
  const strictGitea = new GiteaProvider({ apiUrl: 'https://127.0.0.1:3000', token: 't' });

  it('clones from the integration’s own host only', async () => {
    expect(await gitea.checkCloneUrl('http://127.0.0.1:3000/acme/agent.git')).toBe('http');
  });

  it.each([
    ['a local path', `file://${tmp}/tenant-b/secret`],
    ['another host', 'https://evil.example/acme/agent.git'],
    ['ssh', 'ssh://git@127.0.0.1/acme/agent.git'],
  ])('refuses %s', async (_case, url) => {
    expect(await refusal(gitea.checkCloneUrl(url))).toMatch(
      /must come from 127\.0\.0\.1|is not an absolute URL|must use https/,
    );
  });

  it('refuses the own host too when the outbound policy does (loopback, not allow-listed)', async () => {
    expect(await refusal(strictGitea.checkCloneUrl('https://127.0.0.1:3000/acme/agent.git'))).toMatch(/loopback/);
  });

  it('github clones come from the API host’s parent (api.github.com → github.com), nowhere else', async () => {
    const github = new GitHubProvider({ auth: { token: 't' } });
    expect(await refusal(github.checkCloneUrl('https://gitlab.com/acme/agent.git'))).toBe(
      'Clones of this GitHub integration must come from api.github.com or github.com, not gitlab.com.',
    );
    expect(await refusal(github.checkCloneUrl(`file://${root}/agent`))).toMatch(/must come from/);
  });
});

describe('git with one allowed protocol', () => {
  it('refuses any other transport, whatever the URL', async () => {
    const dir = path.join(tmp, 'checkout-https-only');
    const failure = await refusal(fetchGitRepository({ url: `file://${root}/agent`, dir, allowProtocol: 'https' }));
    expect(failure).toMatch(/transport 'file' not allowed/);
    const ok = await fetchGitRepository({
      url: `file://${root}/agent`,
      dir: path.join(tmp, 'checkout-file'),
      allowProtocol: 'file',
    });
    expect(ok.commit).toMatch(/^[0-9a-f]{40}$/);
  });
});
