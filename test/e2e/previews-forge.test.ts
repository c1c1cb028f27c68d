import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { startForgeStandIn, type ForgeStandIn } from '../support/forge-stand-in.js';
import { eventually } from '../support/service-process.js';

/**
 * Previews driven by the forge, end to end (docs/api.md, Previews): the real api, builder and
 * deployer, a `github` integration whose forge is a stand-in (test/support/forge-stand-in.ts: the
 * REST routes the provider calls, and the repository over git's smart HTTP from a bare
 * repository), and signed `pull_request` deliveries. `opened` makes `<parent>-pr-7` DEPLOYED at
 * the pull request's head, serving its code at its own URL with a `success` status whose
 * `target_url` is that URL and one comment; `synchronize` rolls the new head out and edits the
 * same comment; `closed` removes the preview and its database within 60 s; the parent keeps
 * serving its own code and database throughout.
 */
const REPO = 'hooks/agent';
const server = (version: string) =>
  `require('node:http').createServer((req, res) => {
  if (req.url === '/ok') return res.end('ok');
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ version: ${JSON.stringify(version)}, database: ` +
  `new URL(process.env.DATABASE_URI).pathname.slice(1), redisPrefix: process.env.REDIS_PREFIX }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let forge: ForgeStandIn;
let stand: CodeDeployStand;
let work: string;
let integration: { id: string; webhook_secret: string };

const git = (...args: string[]) =>
  execFileSync('git', ['-C', work, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  }).trim();
/** Commits the app at `version` on the current branch and pushes it to the forge; returns the commit. */
function commitAndPush(version: string): string {
  writeFileSync(
    path.join(work, 'package.json'),
    JSON.stringify({ name: 'agent', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }),
  );
  writeFileSync(path.join(work, 'server.js'), server(version));
  git('add', '-A');
  git('commit', '-q', '-m', version);
  git('push', '-q', 'origin', 'HEAD');
  return git('rev-parse', 'HEAD');
}

beforeAll(async () => {
  forge = await startForgeStandIn([REPO]);
  const bare = path.join(forge.root, `${REPO}.git`);
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  // A host serves the commits of its pull requests by id, as GitHub does.
  execFileSync('git', ['-C', bare, 'config', 'uploadpack.allowReachableSHA1InWant', 'true']);
  work = mkdtempSync(path.join(tmpdir(), 'slipway-forge-work-'));
  execFileSync('git', ['init', '-q', '-b', 'main', work]);
  git('remote', 'add', 'origin', bare);
  commitAndPush('main');
  stand = await startCodeDeployStand({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
  const created = await stand.http.post('/v1/integrations/repohost', {
    provider: 'github',
    name: 'forge',
    config: { api_url: forge.url, token: 'ghp_standin' },
  });
  expect(created.status, created.text).toBe(201);
  integration = created.body;
}, 180_000);

afterAll(async () => {
  await stand?.close();
  await forge?.close();
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

function deliver(action: string, sha: string) {
  const repo = { full_name: REPO, clone_url: `${forge.url}/${REPO}.git`, html_url: `${forge.url}/${REPO}` };
  const raw = JSON.stringify({
    action,
    number: 7,
    pull_request: {
      number: 7,
      html_url: `${forge.url}/${REPO}/pull/7`,
      head: { ref: 'feature', sha, repo },
      base: { ref: 'main', repo },
    },
    repository: repo,
  });
  return stand.http.request('POST', `/v1/integrations/repohost/${integration.id}/webhook`, {
    rawBody: raw,
    key: null,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', integration.webhook_secret).update(raw).digest('hex')}`,
    },
  });
}

async function served(deploymentId: string): Promise<{ version: string; database: string; redisPrefix: string }> {
  const { url } = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
  const res = await fetch(`${url}/which`);
  expect(res.status).toBe(200);
  return (await res.json()) as { version: string; database: string; redisPrefix: string };
}

const statusesOn = (sha: string) =>
  forge.calls.filter((c) => c.method === 'POST' && c.path === `/repos/${REPO}/statuses/${sha}`).map((c) => c.body);

describe('a pull request on the forge', () => {
  it('gets a preview at its head with a success status and one comment, a rollout per push, and loses it when closed', async () => {
    const created = await stand.http.post('/v2/deployments', {
      name: 'forged',
      source: 'repohost',
      source_config: {
        integration_id: integration.id,
        repo_url: `${forge.url}/${REPO}.git`,
        previews: { enabled: true },
      },
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const parentId: string = created.body.id;
    expect((await stand.untilDone(parentId, created.body.latest_revision_id)).status).toBe('DEPLOYED');
    const parent = await served(parentId);

    git('checkout', '-q', '-b', 'feature');
    const first = commitAndPush('feature v1');
    const opened = await deliver('opened', first);
    expect(opened.body.outcome, opened.text).toMatch(/preview forged-pr-7 opened/);
    const preview = (await stand.http.get(`/v2/deployments/${parentId}/previews`)).body.resources[0];
    expect(preview.name).toBe('forged-pr-7');
    const built = await stand.untilDone(preview.id, preview.latest_revision_id);
    expect(built.status, built.status_message).toBe('DEPLOYED');
    expect(built.source_revision_config.repo_commit_sha).toBe(first);
    // Built from what the forge served over git's smart HTTP.
    expect(forge.calls.some((c) => c.path === `/${REPO}.git/git-upload-pack`)).toBe(true);
    const onPreview = await served(preview.id);
    expect(onPreview.version).toBe('feature v1');
    expect(onPreview.database).not.toBe(parent.database);

    const previewUrl: string = (await stand.http.get(`/v2/deployments/${preview.id}`)).body.url;
    await eventually(
      () => statusesOn(first),
      (s) => s.some((b) => b.state === 'success'),
      30_000,
      250,
    );
    expect(statusesOn(first).find((b) => b.state === 'success')).toMatchObject({
      target_url: previewUrl,
      context: 'slipway/forged',
    });
    // The comment follows the status (libs/worker's PreviewFeedback sets the status, then upserts
    // it): the one posted while it built is edited to name the preview's URL.
    await eventually(
      async () => [...forge.comments.values()].map((c) => c.body),
      (bodies) => bodies.some((b) => b.includes(previewUrl)),
      30_000,
      250,
    );
    expect(forge.comments.size).toBe(1);

    const second = commitAndPush('feature v2');
    expect((await deliver('synchronize', second)).body.outcome).toMatch(/rolling out/);
    await eventually(
      async () => (await served(preview.id)).version,
      (v) => v === 'feature v2',
      240_000,
      500,
    );
    await eventually(
      () => statusesOn(second),
      (s) => s.some((b) => b.state === 'success'),
      30_000,
      250,
    );
    expect(forge.comments.size).toBe(1);

    // A push that does not build: a failure status with the reason, and the preview and parent keep serving.
    writeFileSync(path.join(work, 'package.json'), '{ this is not json');
    git('add', '-A');
    git('commit', '-q', '-m', 'broken');
    git('push', '-q', 'origin', 'HEAD');
    const broken = git('rev-parse', 'HEAD');
    await deliver('synchronize', broken);
    const failedRevision = (await stand.http.get(`/v2/deployments/${preview.id}`)).body.latest_revision_id;
    const failed = await stand.untilDone(preview.id, failedRevision);
    expect(failed.status).not.toBe('DEPLOYED');
    await eventually(
      () => statusesOn(broken),
      (s) => s.some((b) => b.state === 'failure'),
      30_000,
      250,
    );
    expect(statusesOn(broken).find((b) => b.state === 'failure')!.description).toBe(
      failed.status_message.slice(0, 140),
    );
    expect((await served(preview.id)).version).toBe('feature v2');
    expect((await served(parentId)).version).toBe('main');

    // What the preview keeps in Redis goes with it.
    const redis = new Redis(stand.api.config.redisUrl, { maxRetriesPerRequest: null });
    try {
      await redis.set(`${onPreview.redisPrefix}:probe`, '1');
      expect((await deliver('closed', broken)).body.outcome).toMatch(/torn down/);
      await eventually(
        () => redis.keys(`${onPreview.redisPrefix}*`),
        (keys) => keys.length === 0,
        60_000,
        500,
      );
    } finally {
      redis.disconnect();
    }
    await eventually(
      async () => (await stand.http.get(`/v2/deployments/${preview.id}`)).status,
      (s) => s === 404,
      60_000,
      500,
    );
    expect(
      await stand.api.dataSource.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [onPreview.database]),
    ).toEqual([]);
    // The parent never changed: its code, its database.
    expect(await served(parentId)).toEqual(parent);
  }, 600_000);
});
