import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { IntegrationRepository, PreviewRepository } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { PreviewFeedback } from '@slipway/worker';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * What a pull request is told about its preview (docs/api.md, Previews): commit statuses on its
 * head and one comment edited in place, through a `github` integration's REST API. The forge is
 * a stand-in (an HTTP server in this test serving the GitHub routes the provider calls —
 * repositories, statuses, issue comments — and recording them), since no GitHub can exist on this
 * machine. The api, database and PreviewFeedback are real; revisions are moved to DEPLOYED and
 * BUILD_FAILED in the database, standing in for the builder and deployer.
 */
const REPO = 'hooks/agent';
const CLONE_URL = 'http://127.0.0.1:9/hooks/agent.git';

interface Recorded {
  method: string;
  path: string;
  body: any;
}

let api: TestApi;
let forge: Server;
let forgeUrl: string;
let failing = false;
/** What the stand-in says of pull request 12: open, closed, or no such pull request. */
let prState: 'open' | 'closed' | 'gone' = 'open';
const calls: Recorded[] = [];
const comments: Array<{ id: number; body: string }> = [];
let integration: { id: string; webhook_secret: string };
let feedback: PreviewFeedback;

function readBody(req: IncomingMessage): Promise<any> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => resolve(text ? JSON.parse(text) : null));
  });
}

beforeAll(async () => {
  forge = createServer(async (req, res) => {
    const body = await readBody(req);
    const path = (req.url ?? '').split('?')[0]!;
    calls.push({ method: req.method!, path, body });
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (path === '/user/repos')
      return json(200, [
        { id: 1, name: 'agent', owner: { login: 'hooks' }, clone_url: CLONE_URL, default_branch: 'main' },
      ]);
    if (failing) return json(502, { message: 'forge is down' });
    if (req.method === 'GET' && path === '/repos/hooks/agent/pulls/12')
      return prState === 'gone' ? json(404, { message: 'Not Found' }) : json(200, { number: 12, state: prState });
    if (req.method === 'POST' && /^\/repos\/hooks\/agent\/statuses\/[0-9a-f]+$/.test(path))
      return json(201, { id: calls.length });
    if (req.method === 'GET' && path === '/repos/hooks/agent/issues/12/comments') return json(200, comments);
    if (req.method === 'POST' && path === '/repos/hooks/agent/issues/12/comments') {
      comments.push({ id: comments.length + 100, body: body.body });
      return json(201, comments.at(-1));
    }
    const edit = /^\/repos\/hooks\/agent\/issues\/comments\/(\d+)$/.exec(path);
    if (req.method === 'PATCH' && edit) {
      const comment = comments.find((c) => c.id === Number(edit[1]))!;
      comment.body = body.body;
      return json(200, comment);
    }
    json(404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => forge.listen(0, '127.0.0.1', resolve));
  forgeUrl = `http://127.0.0.1:${(forge.address() as AddressInfo).port}`;
  api = await startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1', SLIPWAY_EDGE_HTTP_PORT: '18180' });
  const created = await api.http.post('/v1/integrations/repohost', {
    provider: 'github',
    name: 'gh',
    config: { api_url: forgeUrl, token: 'ghp_standin' },
  });
  expect(created.status, created.text).toBe(201);
  integration = created.body;
  feedback = new PreviewFeedback(
    api.config,
    api.dataSource,
    secretsCodec(api.config),
    createLogger({ name: 'feedback-test', level: 'silent' }),
    api.flow,
  );
}, 60_000);

afterAll(async () => {
  await api?.close();
  await new Promise((r) => forge?.close(r));
});

const sign = (raw: string) => `sha256=${createHmac('sha256', integration.webhook_secret).update(raw).digest('hex')}`;
function deliver(action: string, sha: string) {
  const repo = { full_name: REPO, clone_url: CLONE_URL, html_url: CLONE_URL };
  const raw = JSON.stringify({
    action,
    number: 12,
    pull_request: {
      number: 12,
      html_url: `${forgeUrl}/hooks/agent/pull/12`,
      head: { ref: 'feature', sha, repo },
      base: { ref: 'main', repo },
    },
    repository: repo,
  });
  return api.http.request('POST', `/v1/integrations/repohost/${integration.id}/webhook`, {
    rawBody: raw,
    key: null,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': sign(raw),
    },
  });
}

/** A repohost deployment of the stand-in's repository with previews on, named `<prefix>-<random>`. */
const previewParent = (prefix: string) =>
  api.http.post('/v2/deployments', {
    name: `${prefix}-${randomUUID().slice(0, 6)}`,
    source: 'repohost',
    source_config: { integration_id: integration.id, repo_url: CLONE_URL, previews: { enabled: true } },
    source_revision_config: {},
  });
const statuses = () => calls.filter((c) => c.method === 'POST' && c.path.includes('/statuses/'));

describe('commit statuses and one comment on the pull request', () => {
  it('pending while the preview builds, success with its URL, failure with the reason; one comment, edited', async () => {
    const parent = await previewParent('gh-app');
    expect(parent.status, parent.text).toBe(201);
    const first = 'a'.repeat(40);
    expect((await deliver('opened', first)).body.outcome).toMatch(/opened/);
    const preview = (await api.http.get(`/v2/deployments/${parent.body.id}/previews`)).body.resources[0];

    expect(await feedback.runOnce()).toBe(1);
    expect(statuses().at(-1)).toMatchObject({
      path: `/repos/hooks/agent/statuses/${first}`,
      body: { state: 'pending', context: `slipway/${parent.body.name}` },
    });
    expect(comments).toHaveLength(1);
    // Nothing changed: nothing told again.
    expect(await feedback.runOnce()).toBe(0);

    await api.dataSource.query(`UPDATE revisions SET status = 'DEPLOYED' WHERE id = $1`, [preview.latest_revision_id]);
    expect(await feedback.runOnce()).toBe(1);
    expect(statuses().at(-1)!.body).toMatchObject({
      state: 'success',
      target_url: preview.url,
      description: 'Preview deployed',
    });
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(`URL: ${preview.url}`);
    expect(comments[0]!.body).toMatch(new RegExp(`<!-- slipway-preview:${parent.body.id}:[0-9a-f]{24} -->`));

    // A new head: pending on it, then a failed build says why.
    const second = 'b'.repeat(40);
    await deliver('synchronize', second);
    const rolled = (await api.http.get(`/v2/deployments/${preview.id}`)).body;
    await feedback.runOnce();
    expect(statuses().at(-1)).toMatchObject({
      path: `/repos/hooks/agent/statuses/${second}`,
      body: { state: 'pending' },
    });
    await api.dataSource.query(
      `UPDATE revisions SET status = 'BUILD_FAILED', status_message = 'npm ci failed: missing package-lock.json' WHERE id = $1`,
      [rolled.latest_revision_id],
    );
    await feedback.runOnce();
    expect(statuses().at(-1)!.body).toMatchObject({
      state: 'failure',
      description: 'npm ci failed: missing package-lock.json',
    });
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain('failed');
    expect(comments[0]!.body).toContain('npm ci failed: missing package-lock.json');
  });

  it("edits no comment but its own: one someone posted first with the parent's id in a marker is left alone", async () => {
    const parent = await previewParent('gh-planted');
    // The parent's id shows in earlier comments of Slipway's: a pull request's author posts its marker first.
    const planted = { id: 9_000, body: `mine <!-- slipway-preview:${parent.body.id} -->` };
    comments.push({ ...planted });
    await deliver('opened', '6'.repeat(40));
    await feedback.runOnce();
    expect(comments.find((c) => c.id === planted.id)).toEqual(planted);
    const ours = comments.filter((c) => c.id !== planted.id && c.body.includes(`slipway-preview:${parent.body.id}:`));
    expect(ours).toHaveLength(1);
  });

  it('a forge that fails is recorded and tried again later; the preview is untouched', async () => {
    const parent = await previewParent('gh-down');
    failing = true;
    try {
      await deliver('reopened', 'c'.repeat(40));
      // Every preview of the repository is due; the forge answers 502 to each.
      expect(await feedback.runOnce()).toBe(0);
      const [row] = await api.dataSource.query(
        `SELECT f.attempts, f.last_error, f.next_attempt_at > now() AS later FROM preview_feedback f ` +
          `JOIN deployments d ON d.id = f.deployment_id WHERE d.preview_of = $1`,
        [parent.body.id],
      );
      expect(row).toMatchObject({ attempts: 1, later: true });
      expect(row.last_error).toContain('forge is down');
      const preview = (await api.http.get(`/v2/deployments/${parent.body.id}/previews`)).body.resources[0];
      expect(preview.status).not.toBe('AWAITING_DELETE');
      // Said in the API and in the events (the console's Events page, webhooks), not only in a log.
      expect(preview.preview.feedback).toMatchObject({
        reported_state: null,
        attempts: 1,
        last_error: expect.stringContaining('forge is down'),
      });
      const failures = async () =>
        (
          (await api.http.get(`/v2/events?types=preview.feedback_failed&deployment_id=${preview.id}`)).body
            .resources as Array<{ data: Record<string, unknown> }>
        ).map((e) => e.data);
      expect(await failures()).toEqual([
        {
          name: preview.name,
          parent_id: parent.body.id,
          number: 12,
          state: 'pending',
          error: expect.stringContaining('forge is down'),
          attempt: 1,
          given_up: false,
        },
      ]);
      // The forge is back, but the preview is not due again until its backoff passed; then it is told.
      failing = false;
      const toldC = () =>
        statuses().filter((s) => s.path.endsWith('c'.repeat(40)) && s.body.state === 'pending').length;
      const tries = toldC();
      await feedback.runOnce();
      expect(toldC()).toBe(tries);
      await api.dataSource.query(`UPDATE preview_feedback SET next_attempt_at = now() WHERE deployment_id = $1`, [
        preview.id,
      ]);
      await feedback.runOnce();
      expect(toldC()).toBe(tries + 1);
      expect((await api.http.get(`/v2/deployments/${preview.id}`)).body.preview.feedback).toMatchObject({
        reported_state: 'pending',
        attempts: 0,
        last_error: null,
      });
      expect(await failures()).toHaveLength(1);
    } finally {
      failing = false;
    }
  });

  it('a preview whose pull request closed without a delivery is torn down by the check of open pull requests', async () => {
    const parent = await previewParent('gh-missed');
    await deliver('opened', 'd'.repeat(40));
    const preview = (await api.http.get(`/v2/deployments/${parent.body.id}/previews`)).body.resources[0];
    prState = 'open';
    expect(await feedback.closeClosed()).not.toContain(preview.id);
    failing = true;
    try {
      // A forge that cannot answer leaves the preview alone.
      expect(await feedback.closeClosed()).not.toContain(preview.id);
    } finally {
      failing = false;
    }
    prState = 'closed';
    expect(await feedback.closeClosed()).toContain(preview.id);
    const [row] = await api.dataSource.query(`SELECT status, preview_end_reason FROM deployments WHERE id = $1`, [
      preview.id,
    ]);
    expect(row).toEqual({ status: 'AWAITING_DELETE', preview_end_reason: 'closed' });
    prState = 'open';
  });

  it('checks every forge-opened preview over successive checks, a page at a time, then starts over', async () => {
    // Two more previews: whatever else the file made, a walk of pages of one must meet each once.
    const mine: string[] = [];
    for (let i = 0; i < 2; i++) {
      const parent = await previewParent('gh-pages');
      await deliver('opened', `${i + 1}`.repeat(40));
      mine.push((await api.http.get(`/v2/deployments/${parent.body.id}/previews`)).body.resources[0].id);
    }
    const repo = new PreviewRepository(api.dataSource.manager);
    const seen: string[] = [];
    let page = await repo.forgeOpened(1);
    while (page.length) {
      seen.push(page[0]!.id);
      page = await repo.forgeOpened(1, page[0]!.cursor);
    }
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of mine) expect(seen).toContain(id);
    // The check itself goes on from where the last one stopped: one page each, wrapping around.
    // (The checks before this one read fewer than a page: this one starts from the oldest.)
    expect(await feedback.closeClosed(1)).toEqual([]);
    prState = 'closed';
    try {
      // The oldest was looked at by the check before: this one asks about the next.
      const closedOnce = new Set(await feedback.closeClosed(1));
      expect([...closedOnce]).toEqual([seen[1]]);
      for (let i = 0; i <= seen.length && !mine.every((id) => closedOnce.has(id)); i++)
        for (const id of await feedback.closeClosed(1)) closedOnce.add(id);
      for (const id of mine) expect(closedOnce).toContain(id);
    } finally {
      prState = 'open';
    }
  });

  it("opens an integration's provider once per pass, however many of its previews are due", async () => {
    // The earlier previews of pull request 12 were torn down (closed): two parents of its repository, two new previews.
    for (const n of [1, 2]) {
      const parent = await api.http.post('/v2/deployments', {
        name: `gh-many${n}-${randomUUID().slice(0, 6)}`,
        source: 'repohost',
        source_config: { integration_id: integration.id, repo_url: CLONE_URL, previews: { enabled: true } },
        source_revision_config: {},
      });
      expect(parent.status, parent.text).toBe(201);
    }
    await deliver('reopened', 'e'.repeat(40));
    const opened = vi.spyOn(IntegrationRepository.prototype, 'findForClone');
    try {
      expect(await feedback.runOnce()).toBeGreaterThanOrEqual(2);
      expect(opened.mock.calls.filter(([id]) => id === integration.id)).toHaveLength(1);
    } finally {
      opened.mockRestore();
    }
  });
});
