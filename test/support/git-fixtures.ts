import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import type { TestApi } from './test-api.js';

const run = promisify(execFile);

/** Identity and settings for commits, independent of whatever global git config the machine has. */
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Slipway Test',
  GIT_AUTHOR_EMAIL: 'test@slipway.invalid',
  GIT_COMMITTER_NAME: 'Slipway Test',
  GIT_COMMITTER_EMAIL: 'test@slipway.invalid',
};

/** Runs git (no shell); returns trimmed stdout. */
export async function git(args: string[], cwd?: string): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: GIT_ENV });
  return stdout.trim();
}

export interface RepoOptions {
  /** The branch HEAD points at (the repository's default branch). */
  branch?: string;
  /** A bare repository (what a git server holds), made by cloning a work tree with --bare. */
  bare?: boolean;
  files?: Record<string, string>;
}

export interface LocalRepo {
  path: string;
  /** `file://<path>`: what a `local` integration lists as the repository's url. */
  url: string;
  sha: string;
  defaultBranch: string;
}

const DEFAULT_FILES = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.py:graph' }, dependencies: ['.'] }, null, 2),
  'README.md': '# test agent\n',
};

/** `git init`s `dir` with one commit on `branch` (default `main`). */
export async function initRepo(
  dir: string,
  { branch = 'main', bare = false, files = DEFAULT_FILES }: RepoOptions = {},
): Promise<LocalRepo> {
  if (bare) {
    const work = mkdtempSync(path.join(tmpdir(), 'slipway-work-'));
    try {
      const { sha } = await initRepo(work, { branch, files });
      await git(['clone', '--quiet', '--bare', work, dir]);
      return { path: dir, url: `file://${dir}`, sha, defaultBranch: branch };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  mkdirSync(dir, { recursive: true });
  await git(['init', '--quiet', '--initial-branch', branch, dir]);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  await git(['-C', dir, 'add', '--all']);
  await git(['-C', dir, 'commit', '--quiet', '--no-gpg-sign', '-m', 'initial commit']);
  return { path: dir, url: `file://${dir}`, sha: await git(['-C', dir, 'rev-parse', 'HEAD']), defaultBranch: branch };
}

/** A directory for one integration's repositories under the api's SLIPWAY_LOCAL_REPOS_ROOT. */
export function integrationRoot(api: TestApi, name: string): string {
  const root = path.join(api.config.localReposRoot, name);
  mkdirSync(root, { recursive: true });
  return root;
}

/** Creates a `local` integration over `root` through the API; returns the 201 body. */
export async function createLocalIntegration(api: TestApi, name: string, root: string) {
  const res = await api.http.post('/v1/integrations/repohost', { provider: 'local', name, config: { root } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; webhook_secret: string; webhook_url: string; name: string };
}

export interface RepohostFixture {
  integrationId: string;
  repoUrl: string;
  defaultBranch: string;
  /** The integration's push webhook secret (shown only at creation). */
  webhookSecret: string;
  repo: LocalRepo;
}

const perApi = new WeakMap<TestApi, Promise<RepohostFixture>>();

/**
 * A real git repository (one commit on `main`) and a `local` integration listing it, made once
 * per test api: what a repohost deployment's `integration_id` and `repo_url` must name (C4).
 */
export function repohostFixture(api: TestApi): Promise<RepohostFixture> {
  let fixture = perApi.get(api);
  if (!fixture) {
    fixture = (async () => {
      const root = integrationRoot(api, 'fixture-repos');
      const repo = await initRepo(path.join(root, 'agent'));
      const integration = await createLocalIntegration(api, 'fixture-repos', root);
      return {
        integrationId: integration.id,
        repoUrl: repo.url,
        defaultBranch: repo.defaultBranch,
        webhookSecret: integration.webhook_secret,
        repo,
      };
    })();
    perApi.set(api, fixture);
  }
  return fixture;
}
