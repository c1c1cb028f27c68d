import { execFile } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { createLogger } from '@slipway/logging';
import { Reconciler } from '@slipway/pipeline';
import { repohostFixture, type RepohostFixture } from '../support/git-fixtures.js';
import { entryArgs } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Previews through the API (docs/api.md, Previews), against the real api and database with a
 * `local` integration over a real git repository: each preview a deployment of its own made from
 * its parent, found and filtered as previews, replaced past `max_active`, torn down by DELETE,
 * by its parent's delete and by the reconciler past `expires_at` (time moved in the database),
 * with an event for each. Building and serving a preview is the pipeline's, as for any create.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let api: TestApi;
let repo: RepohostFixture;
let reconciler: Reconciler;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_EDGE_HTTP_PORT: '18180' });
  repo = await repohostFixture(api);
  // Its parents and their previews come to more deployments than a workspace's default quota (100).
  const admin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
  expect((await admin.put(`/v2/workspaces/${api.workspaceId}/quotas`, { deployments: 500 })).status).toBe(200);
  reconciler = new Reconciler(
    api.dataSource,
    api.queues,
    api.flow,
    api.config.pipeline,
    createLogger({ name: 'previews-test', level: 'silent' }),
  );
}, 60_000);

afterAll(async () => {
  await api?.close();
});

async function parent(
  previews: Record<string, unknown> | null = { enabled: true, ttl_hours: 24, max_active: 2 },
  name = `app-${randomUUID().slice(0, 6)}`,
) {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'repohost',
    source_config: {
      integration_id: repo.integrationId,
      repo_url: repo.repoUrl,
      deployment_type: 'dev',
      previews,
      install_command: 'npm ci',
    },
    source_revision_config: {},
    secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-parent' }],
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; name: string; tracing_project_id: string };
}

const open = (parentId: string, body: Record<string, unknown>) =>
  api.http.post(`/v2/deployments/${parentId}/previews`, body);
const events = async (type: string) =>
  (await api.http.get(`/v2/events?types=${type}&limit=100`)).body.resources as any[];

describe('opening a preview', () => {
  it("is a deployment of its own, made from the parent's source, build and secrets, at the pull request's head", async () => {
    const p = await parent();
    const res = await open(p.id, { ref: 'feature/login', number: 7, url: 'https://forge.example/pulls/7' });
    expect(res.status, res.text).toBe(201);
    const preview = res.body;
    expect(preview).toMatchObject({
      name: `${p.name}-pr-7`,
      is_preview: true,
      source: 'repohost',
      source_config: {
        integration_id: repo.integrationId,
        repo_url: repo.repoUrl,
        install_command: 'npm ci',
        previews: null,
      },
      source_revision_config: { repo_ref: 'feature/login' },
      secrets: [{ name: 'OPENAI_API_KEY', value: '********' }],
      preview: {
        parent_id: p.id,
        pull_request: { number: 7, head_ref: 'feature/login', head_sha: null, url: 'https://forge.example/pulls/7' },
      },
    });
    expect(preview.id).not.toBe(p.id);
    expect(preview.tracing_project_id).not.toBe(p.tracing_project_id);
    expect(preview.url).toBe(`http://${p.name}-pr-7.localhost:18180`);
    expect(preview.latest_revision_id).toBeTruthy();
    const expires = Date.parse(preview.preview.expires_at);
    expect(Math.abs(expires - (Date.now() + 24 * 3600_000))).toBeLessThan(60_000);
    // The secret's value is the parent's, sealed for the preview.
    const [sealed] = await api.dataSource.query(`SELECT secrets_sealed FROM deployments WHERE id = $1`, [preview.id]);
    expect(sealed.secrets_sealed).not.toContain('sk-parent');
    expect((await events('preview.created')).find((e) => e.deployment_id === preview.id)?.data).toEqual({
      name: preview.name,
      parent_id: p.id,
      number: 7,
    });
  });

  it('opening it again rolls the new head out in the same preview and extends its life', async () => {
    const p = await parent();
    const first = (await open(p.id, { ref: 'feature', number: 3 })).body;
    await api.dataSource.query(`UPDATE deployments SET preview_expires_at = now() + interval '1 hour' WHERE id = $1`, [
      first.id,
    ]);
    const again = await open(p.id, { ref: 'feature-2', number: 3 });
    expect(again.status, again.text).toBe(200);
    expect(again.body.id).toBe(first.id);
    expect(again.body.latest_revision_id).not.toBe(first.latest_revision_id);
    expect(again.body.source_revision_config.repo_ref).toBe('feature-2');
    expect(again.body.preview.pull_request.head_ref).toBe('feature-2');
    expect(Date.parse(again.body.preview.expires_at)).toBeGreaterThan(Date.now() + 23 * 3600_000);
  });

  it('numbers a preview opened without one, and keeps a long parent name within the limit', async () => {
    const long = `l${randomUUID().replaceAll('-', '')}${'x'.repeat(40)}`.slice(0, 63);
    const p = await parent(undefined, long);
    const a = (await open(p.id, { ref: 'a' })).body;
    const b = (await open(p.id, { ref: 'b' })).body;
    expect([a.preview.pull_request.number, b.preview.pull_request.number]).toEqual([1, 2]);
    expect(a.name.length).toBeLessThanOrEqual(63);
    expect(a.name).toMatch(/-[0-9a-f]{4}-pr-1$/);
  });

  it('is refused where previews are off (409), for a preview itself (422), and on other sources', async () => {
    const off = await parent(null);
    expect((await open(off.id, { ref: 'x' })).status).toBe(409);
    const on = await parent();
    const preview = (await open(on.id, { ref: 'x' })).body;
    expect((await open(preview.id, { ref: 'y' })).status).toBe(422);
    const upload = await api.http.post('/v2/deployments', {
      name: `u-${randomUUID().slice(0, 6)}`,
      source: 'internal_source',
      source_config: { deployment_type: 'dev', previews: { enabled: true } },
      source_revision_config: {},
    });
    expect(upload.status).toBe(422);
    expect(upload.text).toContain('previews');
    const unknownMode = await api.http.post('/v2/deployments', {
      name: `c-${randomUUID().slice(0, 6)}`,
      source: 'repohost',
      source_config: {
        integration_id: repo.integrationId,
        repo_url: repo.repoUrl,
        previews: { enabled: true, database: 'snapshot' },
      },
      source_revision_config: {},
    });
    expect(unknownMode.status).toBe(422);
    expect(unknownMode.text).toContain('database');
  });
});

describe("the parent's secret overrides for its previews", () => {
  it(
    'are stored sealed and shown masked, replace the parent’s value of their name in each preview, ' +
      'and keep their value when sent masked',
    async () => {
      const p = await parent({
        enabled: true,
        secrets: [
          { name: 'OPENAI_API_KEY', value: 'sk-preview-only' },
          { name: 'PREVIEW_ONLY', value: 'yes' },
        ],
      });
      const shown = (await api.http.get(`/v2/deployments/${p.id}`)).body.source_config.previews;
      expect(shown.secrets).toEqual([
        { name: 'OPENAI_API_KEY', value: '********' },
        { name: 'PREVIEW_ONLY', value: '********' },
      ]);
      const [row] = await api.dataSource.query(`SELECT source_config::text AS text FROM deployments WHERE id = $1`, [
        p.id,
      ]);
      expect(row.text).not.toContain('sk-preview-only');
      expect(row.text).not.toContain('"yes"');

      const preview = (await open(p.id, { ref: 'f', number: 1 })).body;
      const secretsOf = async (id: string) => {
        const [d] = await api.dataSource.query(`SELECT secrets_sealed FROM deployments WHERE id = $1`, [id]);
        return Object.fromEntries(
          secretsCodec(api.config)
            .openSecrets(d.secrets_sealed, id)
            .map((x) => [x.name, x.value]),
        );
      };
      expect(await secretsOf(preview.id)).toEqual({ OPENAI_API_KEY: 'sk-preview-only', PREVIEW_ONLY: 'yes' });
      expect(await secretsOf(p.id)).toEqual({ OPENAI_API_KEY: 'sk-parent' });

      // A GET → edit → PATCH round trip: the masked value keeps the stored one, a new one replaces.
      const patched = await api.http.patch(`/v2/deployments/${p.id}`, {
        source_config: {
          previews: {
            ...shown,
            secrets: [
              { name: 'OPENAI_API_KEY', value: '********' },
              { name: 'PREVIEW_ONLY', value: 'again' },
            ],
          },
        },
      });
      expect(patched.status, patched.text).toBe(200);
      const next = (await open(p.id, { ref: 'g', number: 2 })).body;
      expect(await secretsOf(next.id)).toEqual({ OPENAI_API_KEY: 'sk-preview-only', PREVIEW_ONLY: 'again' });
      // A masked value with nothing stored under its name is refused, naming it.
      const unknown = await api.http.patch(`/v2/deployments/${p.id}`, {
        source_config: { previews: { enabled: true, secrets: [{ name: 'NEW_ONE', value: '********' }] } },
      });
      expect(unknown.status).toBe(400);
      expect(unknown.text).toContain('NEW_ONE');
    },
  );
});

describe('finding previews', () => {
  it('lists a parent’s previews, and filters the deployment list by is_preview', async () => {
    const p = await parent();
    const preview = (await open(p.id, { ref: 'f', number: 11 })).body;
    expect((await api.http.get(`/v2/deployments/${p.id}/previews`)).body.resources.map((d: any) => d.id)).toEqual([
      preview.id,
    ]);
    const only = (await api.http.get('/v2/deployments?is_preview=true&limit=100')).body.resources.map((d: any) => d.id);
    expect(only).toContain(preview.id);
    expect(only).not.toContain(p.id);
    const none = (await api.http.get('/v2/deployments?is_preview=false&limit=100')).body.resources.map(
      (d: any) => d.id,
    );
    expect(none).toContain(p.id);
    expect(none).not.toContain(preview.id);
    // The default list shows both, each saying what it is.
    const all = (await api.http.get(`/v2/deployments?deployment_ids=${p.id},${preview.id}`)).body.resources;
    expect(all.map((d: any) => [d.id, d.is_preview]).sort()).toEqual(
      [
        [p.id, false],
        [preview.id, true],
      ].sort(),
    );
  });
});

describe('ending previews', () => {
  const deleted = async (id: string) =>
    (await events('preview.deleted')).find((e) => e.deployment_id === id)?.data.reason;
  const status = async (id: string) =>
    (await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [id]))[0]?.status;

  it('past max_active, the least recently active preview goes first', async () => {
    const p = await parent({ enabled: true, max_active: 2 });
    const first = (await open(p.id, { ref: 'a', number: 1 })).body;
    const second = (await open(p.id, { ref: 'b', number: 2 })).body;
    await api.dataSource.query(`UPDATE deployments SET last_activity_at = now() - interval '1 day' WHERE id = $1`, [
      second.id,
    ]);
    const third = (await open(p.id, { ref: 'c', number: 3 })).body;
    expect(await status(second.id)).toBe('AWAITING_DELETE');
    expect(await deleted(second.id)).toBe('max_active');
    expect(await status(first.id)).not.toBe('AWAITING_DELETE');
    expect(await status(third.id)).not.toBe('AWAITING_DELETE');
  });

  it('DELETE …/previews/{number} starts its delete; an unknown number is 404', async () => {
    const p = await parent();
    const preview = (await open(p.id, { ref: 'a', number: 5 })).body;
    expect((await api.http.delete(`/v2/deployments/${p.id}/previews/5`)).status).toBe(204);
    expect(await status(preview.id)).toBe('AWAITING_DELETE');
    expect(await deleted(preview.id)).toBe('api');
    expect((await api.http.delete(`/v2/deployments/${p.id}/previews/99`)).status).toBe(404);
    // While it is being torn down, the number cannot be opened again.
    expect((await open(p.id, { ref: 'a', number: 5 })).status).toBe(409);
  });

  it("the parent's delete takes its previews with it", async () => {
    const p = await parent();
    const preview = (await open(p.id, { ref: 'a', number: 1 })).body;
    expect((await api.http.delete(`/v2/deployments/${p.id}`)).status).toBe(204);
    expect(await status(preview.id)).toBe('AWAITING_DELETE');
    expect(await deleted(preview.id)).toBe('parent_deleted');
  });

  it('the reconciler tears a preview down past expires_at, and only then', async () => {
    const p = await parent();
    const [stale, fresh] = [
      (await open(p.id, { ref: 'a', number: 1 })).body,
      (await open(p.id, { ref: 'b', number: 2 })).body,
    ];
    await api.dataSource.query(
      `UPDATE deployments SET preview_expires_at = now() - interval '1 second' WHERE id = $1`,
      [stale.id],
    );
    const report = await reconciler.run();
    expect(report.previewsExpired).toContain(stale.id);
    expect(report.previewsExpired).not.toContain(fresh.id);
    expect(await status(stale.id)).toBe('AWAITING_DELETE');
    expect(await deleted(stale.id)).toBe('expired');
    expect(await status(fresh.id)).not.toBe('AWAITING_DELETE');
  });
});

describe('driven by the forge: signed pull_request deliveries', () => {
  const sign = (raw: string) => `sha256=${createHmac('sha256', repo.webhookSecret).update(raw).digest('hex')}`;
  const deliver = (payload: unknown, signature?: string | null) => {
    const raw = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
    };
    const sig = signature === undefined ? sign(raw) : signature;
    if (sig !== null) headers['x-hub-signature-256'] = sig;
    return api.http.request('POST', `/v1/integrations/repohost/${repo.integrationId}/webhook`, {
      rawBody: raw,
      key: null,
      headers,
    });
  };
  /** A GitHub-shaped pull_request event of the fixture repository, from its own branch unless `fromFork`. */
  const event = (action: string, number: number, ref: string, sha: string, fromFork = false) => {
    const base = { full_name: 'hooks/agent', clone_url: repo.repoUrl, html_url: repo.repoUrl };
    return {
      action,
      number,
      pull_request: {
        number,
        html_url: `https://forge.example/hooks/agent/pull/${number}`,
        head: {
          ref,
          sha,
          repo: fromFork ? { full_name: 'someone/agent', clone_url: 'https://forge.example/someone/agent.git' } : base,
        },
        base: { ref: 'main', repo: base },
      },
      repository: base,
    };
  };
  const previewOf = async (parentId: string, number: number) =>
    ((await api.http.get(`/v2/deployments/${parentId}/previews`)).body.resources as any[]).find(
      (d) => d.preview.pull_request.number === number,
    );

  it('opened opens the preview at the head, synchronize rolls the new head out, closed tears it down', async () => {
    const p = await parent();
    const opened = await deliver(event('opened', 41, 'feat/x', 'a'.repeat(40)));
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.outcome).toMatch(/Pull request #41 opened: preview .*-pr-41 opened/);
    const preview = await previewOf(p.id, 41);
    expect(preview.preview.pull_request).toEqual({
      number: 41,
      head_ref: 'feat/x',
      head_sha: 'a'.repeat(40),
      url: 'https://forge.example/hooks/agent/pull/41',
    });

    const synced = await deliver(event('synchronize', 41, 'feat/x', 'b'.repeat(40)));
    expect(synced.body.outcome).toMatch(/rolling out/);
    const after = await previewOf(p.id, 41);
    expect(after.id).toBe(preview.id);
    expect(after.latest_revision_id).not.toBe(preview.latest_revision_id);
    expect(after.preview.pull_request.head_sha).toBe('b'.repeat(40));
    // Gitea spells a new head `synchronized`.
    expect((await deliver(event('synchronized', 41, 'feat/x', '9'.repeat(40)))).body.outcome).toMatch(/rolling out/);
    expect((await previewOf(p.id, 41)).preview.pull_request.head_sha).toBe('9'.repeat(40));

    const closed = await deliver(event('closed', 41, 'feat/x', '9'.repeat(40)));
    expect(closed.body.outcome).toMatch(/torn down/);
    const [row] = await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [preview.id]);
    expect(row.status).toBe('AWAITING_DELETE');
    expect((await events('preview.deleted')).find((e) => e.deployment_id === preview.id)?.data.reason).toBe('closed');
  });

  it('a pull request from a fork builds nothing until an admin approves its head, which then builds that commit', async () => {
    const p = await parent();
    const res = await deliver(event('opened', 42, 'evil', 'c'.repeat(40), true));
    expect(res.status).toBe(200);
    expect(res.body.outcome).toContain('fork');
    expect(res.body.outcome).toContain(`/v2/deployments/${p.id}/previews/42/approve`);
    expect(await previewOf(p.id, 42)).toBeUndefined();
    // A new head replaces the one waiting; a member cannot approve.
    await deliver(event('synchronize', 42, 'evil', 'f'.repeat(40), true));
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    expect((await member.post(`/v2/deployments/${p.id}/previews/42/approve`, {})).status).toBe(403);
    // What waits, listed with the head an approve builds; an approve naming the head reviewed
    // before the fork pushed again builds nothing.
    const waiting = await api.http.get(`/v2/deployments/${p.id}/preview-requests`);
    expect(waiting.status, waiting.text).toBe(200);
    expect(waiting.body.resources).toEqual([
      expect.objectContaining({
        number: 42,
        head_ref: 'evil',
        head_sha: 'f'.repeat(40),
        fork_repository: 'someone/agent',
      }),
    ]);
    const stale = await api.http.post(`/v2/deployments/${p.id}/previews/42/approve`, { head_sha: 'c'.repeat(40) });
    expect(stale.status, stale.text).toBe(404);
    expect(await previewOf(p.id, 42)).toBeUndefined();
    const approved = await api.http.post(`/v2/deployments/${p.id}/previews/42/approve`, { head_sha: 'f'.repeat(40) });
    expect(approved.status, approved.text).toBe(201);
    expect(approved.body.preview.pull_request).toMatchObject({
      number: 42,
      head_ref: 'evil',
      head_sha: 'f'.repeat(40),
    });
    expect(approved.body.source_revision_config).toMatchObject({ repo_ref: 'evil', repo_commit_sha: 'f'.repeat(40) });
    // Approved once: nothing waits any more.
    expect((await api.http.post(`/v2/deployments/${p.id}/previews/42/approve`, {})).status).toBe(404);
    expect((await api.http.get(`/v2/deployments/${p.id}/preview-requests`)).body.resources).toEqual([]);
  });

  it("the parent's approval label, added on the forge, approves the fork's head that waits, and no other", async () => {
    const p = await parent({ enabled: true, max_active: 5 });
    expect((await api.http.get(`/v2/deployments/${p.id}`)).body.source_config.previews.approval_label).toBe(
      'preview-approved',
    );
    const off = await parent({ enabled: true, max_active: 5, approval_label: null });
    const labeled = (sha: string, name: string) => ({
      ...event('labeled', 47, 'fork-branch', sha, true),
      label: { name },
    });
    const opened = await deliver(event('opened', 47, 'fork-branch', 'd'.repeat(40), true));
    expect(opened.body.outcome).toContain("or the label 'preview-approved'");
    // Another label, or the right one on a head older than the one waiting: nothing builds.
    expect((await deliver(labeled('d'.repeat(40), 'bug'))).status).toBe(200);
    await deliver(event('synchronize', 47, 'fork-branch', 'e'.repeat(40), true));
    const stale = await deliver(labeled('d'.repeat(40), 'preview-approved'));
    expect(stale.body.outcome).toContain(`nothing waiting at ${'d'.repeat(40)}`);
    expect(await previewOf(p.id, 47)).toBeUndefined();
    // The label on the head that waits builds that commit; where label approval is off, nothing.
    const approved = await deliver(labeled('e'.repeat(40), 'preview-approved'));
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.outcome).toContain("approved by label 'preview-approved'");
    const preview = await previewOf(p.id, 47);
    expect(preview.source_revision_config).toMatchObject({ repo_ref: 'fork-branch', repo_commit_sha: 'e'.repeat(40) });
    expect(await previewOf(off.id, 47)).toBeUndefined();
    expect((await api.http.post(`/v2/deployments/${off.id}/previews/47/approve`, {})).status).toBe(201);

    // Gitea: `label_updated` (under the same pull_request event), with the pull request's labels as they now are.
    await deliver(event('opened', 48, 'fork-gitea', '1'.repeat(40), true));
    const gitea = (labels: string[]) => {
      const e = event('label_updated', 48, 'fork-gitea', '1'.repeat(40), true);
      return { ...e, pull_request: { ...e.pull_request, labels: labels.map((name) => ({ name })) } };
    };
    expect((await deliver(gitea(['bug']))).body.outcome).toContain('not its approval label');
    expect(await previewOf(p.id, 48)).toBeUndefined();
    const viaGitea = await deliver(gitea(['bug', 'preview-approved']));
    expect(viaGitea.body.outcome).toContain("approved by label 'preview-approved'");
    expect((await previewOf(p.id, 48)).source_revision_config.repo_commit_sha).toBe('1'.repeat(40));
  });

  it('on Gitea, a label left on from an earlier head approves no newer one: it is removed and added again', async () => {
    const p = await parent({ enabled: true, max_active: 5 });
    const at = (action: string, sha: string, labels: string[]) => {
      const e = event(action, 49, 'fork-gitea', sha, true);
      return { ...e, pull_request: { ...e.pull_request, labels: labels.map((name) => ({ name })) } };
    };
    await deliver(at('opened', '2'.repeat(40), []));
    expect((await deliver(at('label_updated', '2'.repeat(40), ['preview-approved']))).body.outcome).toContain(
      "approved by label 'preview-approved'",
    );
    // The fork pushes again while the label is still on; a maintainer then changes another label.
    await deliver(at('synchronized', '3'.repeat(40), ['preview-approved']));
    const other = await deliver(at('label_updated', '3'.repeat(40), ['preview-approved', 'bug']));
    expect(other.body.outcome).toContain('remove it and add it again');
    expect((await previewOf(p.id, 49)).source_revision_config.repo_commit_sha).toBe('2'.repeat(40));
    // Removed, then added again: that approves the head that waits.
    expect((await deliver(at('label_updated', '3'.repeat(40), ['bug']))).body.outcome).toContain(
      'not its approval label',
    );
    const again = await deliver(at('label_updated', '3'.repeat(40), ['bug', 'preview-approved']));
    expect(again.body.outcome).toContain("approved by label 'preview-approved'");
    expect((await previewOf(p.id, 49)).source_revision_config.repo_commit_sha).toBe('3'.repeat(40));
    // Gitea's `label_cleared` (every label taken off at once) counts as a removal too.
    await deliver(at('synchronized', '7'.repeat(40), ['preview-approved']));
    await deliver(at('label_cleared', '7'.repeat(40), []));
    expect((await deliver(at('label_updated', '7'.repeat(40), ['preview-approved']))).body.outcome).toContain(
      "approved by label 'preview-approved'",
    );
  });

  it("a head that is no branch of the repository (Gitea's AGit pull requests, open to readers) is taken for a fork's", async () => {
    const p = await parent();
    const agit = event('opened', 50, 'refs/pull/50/head', '4'.repeat(40));
    const res = await deliver(agit);
    expect(res.body.outcome).toContain('fork');
    expect(await previewOf(p.id, 50)).toBeUndefined();
    // It waits for approval like any fork's head.
    expect((await api.http.post(`/v2/deployments/${p.id}/previews/50/approve`, {})).status).toBe(201);
  });

  it('a payload that does not name both repositories is taken for a fork’s', async () => {
    const p = await parent();
    const payload = event('opened', 46, 'nameless', 'c'.repeat(40));
    for (const repo of [payload.pull_request.head.repo, payload.pull_request.base.repo, payload.repository])
      delete (repo as { full_name?: string }).full_name;
    expect((await deliver(payload)).body.outcome).toContain('fork');
    expect(await previewOf(p.id, 46)).toBeUndefined();
  });

  it('a signed pull request event older than the replay window is refused and acts on nothing', async () => {
    const p = await parent();
    const old = event('opened', 51, 'feat/old', '5'.repeat(40));
    const stale = {
      ...old,
      pull_request: { ...old.pull_request, updated_at: new Date(Date.now() - 8 * 86_400_000).toISOString() },
    };
    const res = await deliver(stale);
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('replay window');
    expect(await previewOf(p.id, 51)).toBeUndefined();
    const fresh = { ...old, pull_request: { ...old.pull_request, updated_at: new Date().toISOString() } };
    expect((await deliver(fresh)).body.outcome).toMatch(/preview .*-pr-51 opened/);
  });

  it('a fork’s pull request closed while waiting leaves nothing waiting', async () => {
    const p = await parent();
    await deliver(event('opened', 45, 'evil', 'c'.repeat(40), true));
    await deliver(event('closed', 45, 'evil', 'c'.repeat(40), true));
    expect((await api.http.post(`/v2/deployments/${p.id}/previews/45/approve`, {})).status).toBe(404);
  });

  it('an unsigned or mis-signed delivery is refused and recorded, building nothing', async () => {
    const p = await parent();
    expect((await deliver(event('opened', 43, 'feat/y', 'd'.repeat(40)), null)).status).toBe(401);
    expect((await deliver(event('opened', 43, 'feat/y', 'd'.repeat(40)), `sha256=${'0'.repeat(64)}`)).status).toBe(401);
    expect(await previewOf(p.id, 43)).toBeUndefined();
    const deliveries = (await api.http.get(`/v1/integrations/repohost/${repo.integrationId}/deliveries?limit=5`)).body
      .resources;
    expect(deliveries.slice(0, 2).map((d: any) => [d.event, d.signature_valid, d.status_code])).toEqual([
      ['pull_request', false, 401],
      ['pull_request', false, 401],
    ]);
  });

  it('the same signed delivery twice is refused as a replay', async () => {
    await parent();
    const payload = event('opened', 44, 'feat/z', 'e'.repeat(40));
    expect((await deliver(payload)).status).toBe(200);
    expect((await deliver(payload)).status).toBe(409);
  });
});

describe('`slipway preview` for CI scripts without a forge', () => {
  const cli = (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [...entryArgs('cli'), 'preview', ...args],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '/tmp',
            SLIPWAY_URL: api.http.baseUrl,
            SLIPWAY_API_KEY: api.adminKey,
          },
          timeout: 60_000,
        },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('creates, lists and deletes a preview by the parent’s name, printing JSON', async () => {
    const p = await parent();
    const created = await cli('create', p.name, '--ref', 'feature/cli', '--number', '21');
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ name: `${p.name}-pr-21`, number: 21, ref: 'feature/cli' });
    const listed = await cli('list', p.id);
    expect(JSON.parse(listed.stdout).map((d: any) => d.number)).toEqual([21]);
    const deleted = await cli('delete', p.name, '21');
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: 21 });
    expect(
      (await api.dataSource.query(`SELECT status FROM deployments WHERE name = $1`, [`${p.name}-pr-21`]))[0].status,
    ).toBe('AWAITING_DELETE');
  }, 120_000);

  it('says what is wrong: no --ref (usage, exit 2), an unknown deployment, previews off (the api’s detail, exit 1)', async () => {
    const p = await parent(null);
    const noRef = await cli('create', p.name);
    expect(noRef.code).toBe(2);
    expect(noRef.stderr).toContain('--ref');
    const unknown = await cli('create', 'no-such-deployment', '--ref', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no deployment named 'no-such-deployment'");
    const off = await cli('create', p.name, '--ref', 'x');
    expect(off.code).toBe(1);
    expect(off.stderr).toMatch(/409 Previews are not turned on/);
  }, 120_000);
});

describe("the published deploy CLI (@langchain/langgraph-cli's own lookup and calls, unchanged) never adopts a preview", () => {
  it(
    'finds the parent by its name, not its previews; named by a preview’s own name, ' +
      'its upload and image roll-outs are refused (400)',
    async () => {
      const { HostBackendClient } = await import('@langchain/langgraph-cli/dist/cli/utils/host-backend.mjs' as string);
      const { findDeploymentIdByName } = await import(
        '@langchain/langgraph-cli/dist/cli/utils/deploy-helpers.mjs' as string
      );
      const p = await parent();
      const preview = (await open(p.id, { ref: 'feature/cli-lookup', number: 31 })).body;
      const client = new HostBackendClient(api.http.baseUrl, api.adminKey);
      // `langgraphjs deploy --name <parent>`: the list by name_contains holds the preview too; the lookup takes the parent.
      const listed = await client.listDeployments(p.name);
      expect(listed.resources.map((d: { name: string }) => d.name).sort()).toEqual([p.name, preview.name].sort());
      expect(findDeploymentIdByName(listed, p.name)).toBe(p.id);
      // `--name <parent>-pr-31`: the lookup finds the preview, and every way the CLI would roll out onto
      // it is refused, saying why: a preview is a repohost deployment (its pull request drives it),
      // and the CLI only uploads sources and pushes images.
      expect(findDeploymentIdByName(await client.listDeployments(preview.name), preview.name)).toBe(preview.id);
      const before = (
        await api.dataSource.query(`SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1`, [preview.id])
      )[0].n;
      for (const call of [
        () => client.requestUploadUrl(preview.id),
        () => client.requestPushToken(preview.id),
        () => client.updateDeployment(preview.id, 'registry.example/app@sha256:' + 'a'.repeat(64)),
        () =>
          client.updateDeploymentInternalSource(preview.id, {
            sourceTarballPath: `uploads/${preview.id}/x.tar.gz`,
            configPath: 'langgraph.json',
          }),
      ]) {
        const err = await call().then(
          () => null,
          (e: { statusCode?: number; message: string }) => e,
        );
        expect(err?.statusCode).toBe(400);
        expect(err?.message).toMatch(
          /has source repohost|only available for 'internal_docker'|this one's source is repohost|not found for this deployment/,
        );
      }
      expect(
        (
          await api.dataSource.query(`SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1`, [preview.id])
        )[0].n,
      ).toBe(before);
      // The parent itself still takes what its source takes.
      expect(
        (await api.http.patch(`/v2/deployments/${p.id}`, { source_revision_config: { repo_ref: 'main' } })).status,
      ).toBe(200);
    },
  );
});
