import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalIntegration, initRepo, integrationRoot, type LocalRepo } from '../support/git-fixtures.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The repohost push webhook (docs/api.md, Integrations): HMAC-SHA256 over the raw body, every delivery
 * recorded, a push to a tracked branch → exactly one new revision per deployment that builds on
 * push, tags and deletions never build, and a re-delivery never builds twice. Everything is real
 * (a `local` integration over real git repositories); the host's HTTP call is made by the test.
 */

let api: TestApi;
let integrationId: string;
let secret: string;
let service: LocalRepo;
let otherService: LocalRepo;
/** Deployment ids by name. */
const d: Record<string, string> = {};

const hookPath = () => `/v1/integrations/repohost/${integrationId}/webhook`;
const sign = (body: string, key = secret) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
const sha = () => randomUUID().replace(/-/g, '').padEnd(40, '0').slice(0, 40);

/** A push event as GitHub sends it (the fields the webhook reads, plus the usual company). */
function pushPayload(repo: LocalRepo, ref: string, after = sha(), extra: Record<string, unknown> = {}) {
  const name = path.basename(repo.path);
  return {
    ref,
    before: sha(),
    after,
    repository: {
      id: 812345671,
      node_id: 'R_kgDOMGeLxw',
      name,
      full_name: `hooks/${name}`,
      private: true,
      owner: { name: 'hooks', login: 'hooks', id: 90412377, type: 'Organization' },
      html_url: repo.url,
      url: repo.url,
      clone_url: `${repo.url}.git`,
      default_branch: 'main',
      master_branch: 'main',
    },
    pusher: { name: 'octocat', email: 'octocat@example.com' },
    sender: { login: 'octocat', id: 583231, type: 'User' },
    created: false,
    deleted: false,
    forced: false,
    base_ref: null,
    compare: `https://github.com/hooks/${name}/compare/abc...def`,
    commits: [
      {
        id: after,
        message: 'Tune the agent prompt',
        timestamp: '2026-11-21T10:00:00Z',
        author: { name: 'Octo Cat', email: 'octocat@example.com' },
      },
    ],
    head_commit: { id: after, message: 'Tune the agent prompt' },
    ...extra,
  };
}

interface SendOptions {
  event?: string | null;
  delivery?: string | null;
  signature?: string | null;
  headers?: Record<string, string>;
}

function send(
  payload: unknown,
  { event = 'push', delivery = randomUUID(), signature, headers = {} }: SendOptions = {},
) {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const h: Record<string, string> = { 'content-type': 'application/json', ...headers };
  if (event !== null) h['x-github-event'] = event;
  if (delivery !== null) h['x-github-delivery'] = delivery;
  const sig = signature === undefined ? sign(raw) : signature;
  if (sig !== null) h['x-hub-signature-256'] = sig;
  return api.http.request('POST', hookPath(), { rawBody: raw, key: null, headers: h });
}

async function revisionsOf(deploymentId: string) {
  return api.dataSource.query(
    `SELECT id, source_revision_config FROM revisions WHERE deployment_id = $1 ORDER BY created_at`,
    [deploymentId],
  ) as Promise<Array<{ id: string; source_revision_config: Record<string, unknown> }>>;
}

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [name, id] of Object.entries(d)) out[name] = (await revisionsOf(id)).length;
  return out;
}

async function deliveryRow(id: string) {
  const [row] = await api.dataSource.query(`SELECT * FROM webhook_deliveries WHERE id = $1`, [id]);
  return row;
}

async function deploy(name: string, repo: LocalRepo, buildOnPush: boolean, repoRef?: string) {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'repohost',
    source_config: { integration_id: integrationId, repo_url: repo.url, build_on_push: buildOnPush },
    source_revision_config: repoRef ? { repo_ref: repoRef } : {},
  });
  expect(res.status, res.text).toBe(201);
  d[name] = res.body.id;
  return res.body;
}

beforeAll(async () => {
  api = await startTestApi();
  const root = integrationRoot(api, 'hooks');
  service = await initRepo(path.join(root, 'service'));
  otherService = await initRepo(path.join(root, 'other-service.git'), { bare: true });
  const integration = await createLocalIntegration(api, 'hooks', root);
  integrationId = integration.id;
  secret = integration.webhook_secret;
  await deploy('track-a', service, true);
  await deploy('track-b', service, true);
  await deploy('not-tracking', service, false);
  await deploy('on-develop', service, true, 'develop');
  await deploy('other-repo', otherService, true);
});
afterAll(async () => {
  await api?.close();
});

describe('signature', () => {
  it.each([
    ['missing', null],
    ['made with another secret', 'use-the-wrong-secret'],
    ['of another body', 'another-body'],
    ['sha1 instead of sha256', 'sha1'],
    ['not hex', 'sha256=zz'],
  ])('%s → 401, recorded as invalid, nothing built', async (_case, kind) => {
    const before = await counts();
    const payload = pushPayload(service, 'refs/heads/main');
    const raw = JSON.stringify(payload);
    const delivery = randomUUID();
    const signature =
      kind === null
        ? null
        : kind === 'use-the-wrong-secret'
          ? sign(raw, 'whsec_not-the-secret')
          : kind === 'another-body'
            ? sign(JSON.stringify({ ...payload, after: sha() }))
            : kind === 'sha1'
              ? `sha1=${createHmac('sha1', secret).update(raw).digest('hex')}`
              : kind;
    const res = await send(raw, { delivery, signature });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Invalid webhook signature.' });
    expect(await counts()).toEqual(before);
    const rows = await api.dataSource.query(`SELECT * FROM webhook_deliveries WHERE delivery_id = $1`, [delivery]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      integration_id: integrationId,
      signature_valid: false,
      status_code: 401,
      event: 'push',
      ref: null,
      revision_ids: [],
    });
  });

  it('the signature is checked before any parsing: unsigned malformed JSON → 401 (not a parse error), signed → 400', async () => {
    const delivery = randomUUID();
    const garbage = '{"ref": "refs/heads/main", "after": ';
    const unsigned = await send(garbage, { delivery, signature: 'sha256=' + '0'.repeat(64) });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body).toEqual({ detail: 'Invalid webhook signature.' });
    const signed = await send(garbage);
    expect(signed.status).toBe(400);
    expect(signed.body).toEqual({ detail: 'The payload is not valid JSON.' });
    const [row] = await api.dataSource.query(`SELECT * FROM webhook_deliveries WHERE delivery_id = $1`, [delivery]);
    // Recorded without anything from the body.
    expect(row).toMatchObject({
      signature_valid: false,
      status_code: 401,
      ref: null,
      payload_sha256: null,
      revision_ids: [],
    });
  });

  it('an unknown integration → 404, nothing recorded', async () => {
    const missing = randomUUID();
    const raw = JSON.stringify(pushPayload(service, 'refs/heads/main'));
    const res = await api.http.request('POST', `/v1/integrations/repohost/${missing}/webhook`, {
      rawBody: raw,
      key: null,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': sign(raw) },
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Integration ID ${missing} not found.` });
    expect(
      await api.dataSource.query(`SELECT id FROM webhook_deliveries WHERE integration_id = $1`, [missing]),
    ).toEqual([]);
  });

  it('the signature covers the exact bytes: re-formatted JSON with the same meaning is refused', async () => {
    const payload = pushPayload(service, 'refs/heads/main');
    const res = await send(JSON.stringify(payload, null, 2), { signature: sign(JSON.stringify(payload)) });
    expect(res.status).toBe(401);
  });

  it('a form-encoded delivery (cannot be checked) → 415 saying to use JSON, recorded, nothing built', async () => {
    const before = await counts();
    const body = `payload=${encodeURIComponent(JSON.stringify(pushPayload(service, 'refs/heads/main')))}`;
    const delivery = randomUUID();
    const res = await api.http.request('POST', hookPath(), {
      rawBody: body,
      key: null,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-github-event': 'push',
        'x-github-delivery': delivery,
        'x-hub-signature-256': sign(body),
      },
    });
    expect(res.status).toBe(415);
    expect(res.body.detail).toMatch(/application\/json/);
    expect(await counts()).toEqual(before);
    expect(
      (await api.dataSource.query(`SELECT status_code FROM webhook_deliveries WHERE delivery_id = $1`, [delivery]))[0]
        .status_code,
    ).toBe(415);
  });
});

describe('events', () => {
  it('ping → 200 "pong", recorded', async () => {
    const res = await send({ zen: 'Keep it logically awesome.', hook_id: 501234 }, { event: 'ping' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      integration_id: integrationId,
      event: 'ping',
      signature_valid: true,
      status_code: 200,
      outcome: 'pong',
      revision_ids: [],
    });
    expect(await deliveryRow(res.body.id)).toMatchObject({ outcome: 'pong', signature_valid: true });
  });

  it('other events are recorded and ignored', async () => {
    const before = await counts();
    const res = await send({ action: 'opened', issue: { number: 7 } }, { event: 'issues' });
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe("Event 'issues' ignored: only push and pull_request events do anything.");
    expect(await counts()).toEqual(before);
  });

  it('a signed push without a ref → 400, recorded', async () => {
    const res = await send({ zen: 'not a push' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'The push payload has no ref.' });
  });
});

describe('push', () => {
  it('to the tracked branch → exactly one new revision per deployment that builds on push from that repository and branch', async () => {
    const before = await counts();
    const latestBefore = Object.fromEntries(
      await Promise.all(
        Object.entries(d).map(async ([name, id]) => [
          name,
          (await api.http.get(`/v2/deployments/${id}`)).body.latest_revision_id,
        ]),
      ),
    );
    const after = sha();
    const res = await send(pushPayload(service, 'refs/heads/main', after));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      event: 'push',
      ref: 'refs/heads/main',
      signature_valid: true,
      status_code: 200,
      outcome: `Push to main (${after.slice(0, 12)}): created 2 revisions.`,
    });
    expect(res.body.revision_ids).toHaveLength(2);

    expect(await counts()).toEqual({ ...before, 'track-a': before['track-a']! + 1, 'track-b': before['track-b']! + 1 });
    for (const name of ['track-a', 'track-b']) {
      const deployment = (await api.http.get(`/v2/deployments/${d[name]}`)).body;
      expect(res.body.revision_ids).toContain(deployment.latest_revision_id);
      const revision = (await api.http.get(`/v2/deployments/${d[name]}/revisions/${deployment.latest_revision_id}`))
        .body;
      expect(revision.source_revision_config).toMatchObject({
        repo_ref: 'main',
        repo_commit_sha: after,
        graph_config_path: 'langgraph.json',
      });
      expect(revision.source).toBe('repohost');
      // Made by Slipway, set off by the push, saying so.
      expect(revision).toMatchObject({
        trigger: 'push',
        created_by: { kind: 'system', id: integrationId, name: 'push to main' },
      });
      // Behind the first revision, still in flight: the flow queued it (one in flight per deployment).
      expect(revision.status).toBe('QUEUED');
    }
    for (const name of ['not-tracking', 'on-develop', 'other-repo']) {
      expect((await api.http.get(`/v2/deployments/${d[name]}`)).body.latest_revision_id).toBe(latestBefore[name]);
    }
    const row = await deliveryRow(res.body.id);
    expect(row).toMatchObject({ status_code: 200, signature_valid: true, ref: 'refs/heads/main' });
    expect([...row.revision_ids].sort()).toEqual([...res.body.revision_ids].sort());
  });

  it('a re-delivery of the same payload builds nothing again: 409, recorded', async () => {
    const delivery = randomUUID();
    const payload = pushPayload(service, 'refs/heads/main');
    const first = await send(payload, { delivery });
    expect(first.body.revision_ids).toHaveLength(2);
    const before = await counts();

    const again = await send(payload, { delivery });
    expect(again.status, again.text).toBe(409);
    expect(again.body).toEqual({
      detail: 'Replayed push refused: this exact signed payload was already received; nothing was built.',
    });
    expect(await counts()).toEqual(before);
    const rows = await api.dataSource.query(
      `SELECT status_code, signature_valid FROM webhook_deliveries WHERE delivery_id = $1 ORDER BY received_at`,
      [delivery],
    );
    expect(rows).toEqual([
      { status_code: 200, signature_valid: true },
      { status_code: 409, signature_valid: true },
    ]);
  });

  it('a captured push replayed under a fresh delivery id (the id is not signed) builds nothing: no rollback', async () => {
    const old = pushPayload(service, 'refs/heads/main');
    const captured = JSON.stringify(old);
    expect((await send(captured)).body.revision_ids).toHaveLength(2);
    const newerPayload = pushPayload(service, 'refs/heads/main');
    const newer = await send(newerPayload);
    expect(newer.body.revision_ids).toHaveLength(2);
    const before = await counts();

    const replay = await send(captured, { delivery: randomUUID() });
    expect(replay.status).toBe(409);
    expect(replay.body.detail).toMatch(/^Replayed push refused/);
    expect(await counts()).toEqual(before);
    const deployment = (await api.http.get(`/v2/deployments/${d['track-a']}`)).body;
    const revision = (await api.http.get(`/v2/deployments/${d['track-a']}/revisions/${deployment.latest_revision_id}`))
      .body;
    expect(revision.source_revision_config.repo_commit_sha).toBe(newerPayload.after);
  });

  it('a signed push older than the replay window (by its signed repository.pushed_at) → 409, nothing built', async () => {
    const before = await counts();
    const payload = pushPayload(service, 'refs/heads/main');
    const pushedAt = Math.floor(Date.now() / 1000) - 8 * 24 * 60 * 60;
    const res = await send({ ...payload, repository: { ...payload.repository, pushed_at: pushedAt } });
    expect(res.status).toBe(409);
    expect(res.body.detail).toBe(
      `Replayed push refused: it was pushed on ${new Date(pushedAt * 1000).toISOString()}, longer ago than the 7-day replay window.`,
    );
    expect(await counts()).toEqual(before);
    const fresh = await send({
      ...payload,
      repository: { ...payload.repository, pushed_at: Math.floor(Date.now() / 1000) },
    });
    expect(fresh.status, fresh.text).toBe(200);
    expect(fresh.body.revision_ids).toHaveLength(2);
  });

  it('copies of one delivery arriving together still make one revision per deployment; the others are refused as replays', async () => {
    const before = await counts();
    const delivery = randomUUID();
    const payload = pushPayload(service, 'refs/heads/main');
    const results = await Promise.all(Array.from({ length: 4 }, () => send(payload, { delivery })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    expect(results.flatMap((r) => r.body.revision_ids ?? [])).toHaveLength(2);
    expect(await counts()).toEqual({ ...before, 'track-a': before['track-a']! + 1, 'track-b': before['track-b']! + 1 });
  });

  it('a tag push, a push to an untracked branch and a branch deletion create nothing', async () => {
    const before = await counts();
    const tag = await send(pushPayload(service, 'refs/tags/v1.2.0'));
    expect(tag.status).toBe(200);
    expect(tag.body.outcome).toBe('Tag push refs/tags/v1.2.0 ignored: tags never trigger builds.');
    const feature = await send(pushPayload(service, 'refs/heads/feature-x'));
    expect(feature.status).toBe(200);
    expect(feature.body.outcome).toMatch(/no deployment builds this repository's feature-x on push/);
    const deleted = await send(
      pushPayload(service, 'refs/heads/main', '0000000000000000000000000000000000000000', { deleted: true }),
    );
    expect(deleted.status).toBe(200);
    expect(deleted.body.outcome).toBe('Branch main was deleted; nothing to build.');
    for (const res of [tag, feature, deleted]) expect(res.body.revision_ids).toEqual([]);
    expect(await counts()).toEqual(before);
  });

  it('a push to another tracked branch builds only the deployment on that branch', async () => {
    const before = await counts();
    const res = await send(pushPayload(service, 'refs/heads/develop'));
    expect(res.body.revision_ids).toHaveLength(1);
    expect(await counts()).toEqual({ ...before, 'on-develop': before['on-develop']! + 1 });
  });

  it('Gitea-style headers and a payload naming the repository by html_url only', async () => {
    const before = await counts();
    const after = sha();
    const payload = {
      ref: 'refs/heads/main',
      before: sha(),
      after,
      repository: { id: 44, name: 'other-service', html_url: otherService.url.replace(/\.git$/, '') },
    };
    const raw = JSON.stringify(payload);
    const delivery = randomUUID();
    const res = await api.http.request('POST', hookPath(), {
      rawBody: raw,
      key: null,
      headers: {
        'content-type': 'application/json',
        'x-gitea-event': 'push',
        'x-gitea-delivery': delivery,
        'x-hub-signature-256': sign(raw),
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ event: 'push', delivery_id: delivery });
    expect(res.body.revision_ids).toHaveLength(1);
    expect(await counts()).toEqual({ ...before, 'other-repo': before['other-repo']! + 1 });
  });

  it('a deployment being deleted or no longer building on push is left alone', async () => {
    const doomed = await deploy('doomed', service, true);
    const switchedOff = await deploy('switched-off', service, true);
    expect((await api.http.delete(`/v2/deployments/${doomed.id}`)).status).toBe(204);
    expect(
      (await api.http.patch(`/v2/deployments/${switchedOff.id}`, { source_config: { build_on_push: false } })).status,
    ).toBe(200);
    const before = await counts();
    const res = await send(pushPayload(service, 'refs/heads/main'));
    expect(res.body.revision_ids).toHaveLength(2);
    expect(await counts()).toEqual({ ...before, 'track-a': before['track-a']! + 1, 'track-b': before['track-b']! + 1 });
  });
});

describe('GET .../deliveries', () => {
  it('lists every delivery newest first in the envelope, invalid ones included', async () => {
    const total = (
      await api.dataSource.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE integration_id = $1`, [
        integrationId,
      ])
    )[0].n;
    const ping = await send({ zen: 'newest' }, { event: 'ping' });
    const page = await api.http.get(`/v1/integrations/repohost/${integrationId}/deliveries?limit=3`);
    expect(page.status).toBe(200);
    expect(page.body.offset).toBe(3);
    expect(page.body.resources).toHaveLength(3);
    expect(page.body.resources[0]).toEqual({
      id: ping.body.id,
      integration_id: integrationId,
      delivery_id: expect.any(String),
      event: 'ping',
      ref: null,
      signature_valid: true,
      status_code: 200,
      outcome: 'pong',
      revision_ids: [],
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const all = await api.http.get(`/v1/integrations/repohost/${integrationId}/deliveries?limit=100`);
    expect(all.body.resources).toHaveLength(total + 1);
    const times = all.body.resources.map((r: any) => r.received_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(all.body.resources.some((r: any) => r.signature_valid === false && r.status_code === 401)).toBe(true);
    expect(all.body.resources.some((r: any) => r.revision_ids.length === 2)).toBe(true);
  });

  it('members can list; another workspace gets 404; no key → 401', async () => {
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    expect((await member.get(`/v1/integrations/repohost/${integrationId}/deliveries`)).status).toBe(200);
    const otherWorkspace = randomUUID();
    await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other')`, [
      otherWorkspace,
      api.organizationId,
    ]);
    const other = api.http.as(await api.mintKey({ workspaceId: otherWorkspace }));
    expect((await other.get(`/v1/integrations/repohost/${integrationId}/deliveries`)).status).toBe(404);
    expect((await api.http.get(`/v1/integrations/repohost/${integrationId}/deliveries`, { key: null })).status).toBe(
      401,
    );
  });

  it("a delivery racing its integration's delete is a 404, never a 5xx, and nothing is left behind", async () => {
    const doomed = await createLocalIntegration(api, 'doomed', integrationRoot(api, 'hooks'));
    const path = `/v1/integrations/repohost/${doomed.id}/webhook`;
    const deliver = () =>
      api.http.request('POST', path, {
        rawBody: '{}',
        key: null,
        headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID() },
      });
    // Deliveries keep arriving, one every 2 ms, while the integration is deleted once the first
    // is recorded: each is recorded (401, unsigned) or finds it gone (404), whichever side of the
    // delete (its lookup, its insert, its read-back) it lands on.
    const paced = Array.from({ length: 60 }, (_, i) => sleep(2 * i).then(deliver));
    await eventually(
      () => api.dataSource.query(`SELECT 1 FROM webhook_deliveries WHERE integration_id = $1 LIMIT 1`, [doomed.id]),
      (rows: unknown[]) => rows.length > 0,
      10_000,
      5,
    );
    const deleted = await api.http.delete(`/v1/integrations/repohost/${doomed.id}`);
    const statuses = (await Promise.all(paced)).map((r) => r.status);
    expect(deleted.status).toBe(204);
    expect(statuses.filter((status) => status !== 401 && status !== 404)).toEqual([]);
    expect((await deliver()).status).toBe(404);
    expect(
      await api.dataSource.query(`SELECT 1 FROM webhook_deliveries WHERE integration_id = $1`, [doomed.id]),
    ).toEqual([]);
  });

  it('the webhook secret never reaches a log line', () => {
    expect(api.logs.text()).toContain('webhook signature rejected');
    expect(api.logs.text()).not.toContain(secret);
  });
});

describe('large push payloads', () => {
  it('a declared length over 25 MB → 413 before a byte is read, recorded without the body', async () => {
    const delivery = randomUUID();
    const url = new URL(`${api.baseUrl}${hookPath()}`);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': String(26 * 1024 * 1024),
            'x-github-event': 'push',
            'x-github-delivery': delivery,
            'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => {
            req.destroy();
            resolve({ status: res.statusCode!, body: text });
          });
        },
      );
      req.on('error', reject);
      // Only a first chunk: the answer must not wait for the rest.
      req.write('{"ref":');
    });
    expect(status).toBe(413);
    expect(JSON.parse(body)).toEqual({ detail: `The payload is larger than the limit of ${25 * 1024 * 1024} bytes.` });
    const [row] = await api.dataSource.query(
      `SELECT status_code, signature_valid, ref FROM webhook_deliveries WHERE delivery_id = $1`,
      [delivery],
    );
    expect(row).toEqual({ status_code: 413, signature_valid: false, ref: null });
  });

  it('accepts a signed push far above the global JSON body limit (GitHub sends up to 25 MB)', async () => {
    // ~3 MB of commit messages: three times the default 1 MB limit of every other route.
    const commits = Array.from({ length: 300 }, (_, i) => ({
      id: sha(),
      message: `commit ${i} ${'x'.repeat(10_000)}`,
    }));
    const res = await send(pushPayload(service, 'refs/heads/no-deployment-tracks-this', sha(), { commits }));
    expect(res.status, res.text).toBe(200);
    const other = await api.http.request('POST', '/v2/listeners', {
      rawBody: JSON.stringify({ padding: 'x'.repeat(3_000_000) }),
    });
    expect(other.status).toBe(413);
  });
});
