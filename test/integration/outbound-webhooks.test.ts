import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_CHANNEL, PgNotifications } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { Reconciler } from '@slipway/pipeline';
import { FANOUT_WAKE_BATCH_MS, WebhookFanout } from '@slipway/webhooks';
import { createImageDeployment, createListener, otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { eventually } from '../support/service-process.js';
import { recordStatements } from '../support/statements.js';
import { startTestApi, type TestApi } from '../support/test-api.js';
import { startWebhookHarness, type ReceivedAt as Received, type WebhookHarness } from '../support/webhook-harness.js';

/**
 * Signed outbound webhooks (docs/api.md, Events and webhooks), end to end: the real api, the
 * fan-out, the outbox relay, the `webhooks` worker on real Redis, and a real HTTP receiver on
 * this machine (allow-listed, as a private address must be). Signatures are checked here with
 * an HMAC computed independently of the code under test.
 */

let api: TestApi;
let listenerId: string;
let harness: WebhookHarness;
let receiverUrl: string;
let received: Received[];
/** Path → how many more requests to answer with 500. */
const failures = new Map<string, number>();
const hungUp = new Set<string>();
let fanout: WebhookHarness['fanout'];
let createWebhook: WebhookHarness['createWebhook'];
let deliveries: WebhookHarness['deliveries'];
let foreign: HttpClient;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_RETRY_BASE_MS: '100' });
  listenerId = await createListener(api, 'webhooks');
  ({ client: foreign } = await otherWorkspaceClient(api, 'webhooks-other'));
  harness = await startWebhookHarness(api, (path, res) => {
    if (path.includes('hangup') && !hungUp.has(path)) {
      // An answer broken off half-way, once.
      hungUp.add(path);
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial', () => res.socket?.destroy());
      return;
    }
    const left = failures.get(path) ?? 0;
    if (left > 0) failures.set(path, left - 1);
    res.writeHead(left > 0 ? 500 : 204).end();
  });
  ({ receiverUrl, received, fanout, createWebhook, deliveries } = harness);
});

afterAll(async () => {
  await harness?.close();
  await api?.close();
});

/** Verifies a request the way a receiver following Standard Webhooks does. */
function verify(r: Received, secret: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key)
    .update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`)
    .digest('base64');
  return String(r.headers['webhook-signature']).split(' ').includes(`v1,${expected}`);
}

describe('/v2/webhooks', () => {
  it('creates with the secret shown once; reads, patches and deletes; another workspace and a member key cannot touch it', async () => {
    const hook = await createWebhook('/crud', { description: 'ops channel' });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Object.keys(hook).sort()).toEqual([
      'created_at',
      'deployment_ids',
      'description',
      'event_types',
      'format',
      'id',
      'secret',
      'updated_at',
      'url',
    ]);
    expect(hook.format).toBe('standard');
    const [row] = await api.dataSource.query(`SELECT secret_sealed FROM outbound_webhooks WHERE id = $1`, [hook.id]);
    expect(row.secret_sealed).not.toContain(hook.secret.slice(6));

    const got = await api.http.get(`/v2/webhooks/${hook.id}`);
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    const list = await api.http.get('/v2/webhooks');
    expect(list.body.resources.map((w: any) => w.id)).toContain(hook.id);
    expect(list.text).not.toContain(hook.secret);

    const patched = await api.http.patch(`/v2/webhooks/${hook.id}`, {
      event_types: ['revision.status_changed'],
      description: null,
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ event_types: ['revision.status_changed'], description: null, url: hook.url });

    expect((await foreign.get(`/v2/webhooks/${hook.id}`)).status).toBe(404);
    expect((await foreign.request('DELETE', `/v2/webhooks/${hook.id}`)).status).toBe(404);
    expect((await foreign.get('/v2/webhooks')).body.resources).toEqual([]);
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    expect(
      (await member.post('/v2/webhooks', { url: `${receiverUrl}/x`, event_types: ['deployment.created'] })).status,
    ).toBe(403);
    // No body at all is a 422 naming the body, not a crash in the handler.
    const bodiless = await api.http.request('POST', '/v2/webhooks');
    expect(bodiless.status).toBe(422);
    expect(bodiless.body).toEqual({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
    expect((await api.http.request('PATCH', `/v2/webhooks/${hook.id}`)).status).toBe(422);
    // A member sees where events go, not the whole URL (it can be a credential); an admin does.
    const seenByMember = await member.get(`/v2/webhooks/${hook.id}`);
    expect(seenByMember.status).toBe(200);
    expect(seenByMember.body.url).toBe(`${new URL(hook.url).origin}/…`);
    expect((await member.get('/v2/webhooks')).text).not.toContain('/crud');
    expect(got.body.url).toBe(hook.url);

    expect((await api.http.request('DELETE', `/v2/webhooks/${hook.id}`)).status).toBe(204);
    expect((await api.http.get(`/v2/webhooks/${hook.id}`)).status).toBe(404);
  });

  it('refuses private, loopback, link-local and plain-http targets that are not allow-listed (422 naming url)', async () => {
    for (const url of [
      'https://10.1.2.3/hook',
      'https://169.254.169.254/latest',
      'https://[::1]/x',
      'http://example.com/hook',
      'ftp://example.com/x',
    ]) {
      const res = await api.http.post('/v2/webhooks', { url, event_types: ['deployment.created'] });
      expect(res.status, url).toBe(422);
      expect(JSON.stringify(res.body.detail)).toContain('url');
    }
    const hook = await createWebhook('/patch-refused');
    const res = await api.http.patch(`/v2/webhooks/${hook.id}`, { url: 'https://192.168.1.10/' });
    expect(res.status).toBe(422);
    expect((await api.http.get(`/v2/webhooks/${hook.id}`)).body.url).toBe(hook.url);
    expect((await api.http.post('/v2/webhooks', { url: `${receiverUrl}/x`, event_types: ['nope'] })).status).toBe(422);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });
});

describe('deliveries', () => {
  it(
    'signs each delivery (Standard Webhooks), sends only subscribed types of the chosen deployments, ' +
      'and nothing from before the webhook',
    async () => {
      const before = await createImageDeployment(api, 'wh-before', listenerId);
      const other = await createImageDeployment(api, 'wh-other', listenerId);
      const hook = await createWebhook('/signed', {
        event_types: ['deployment.created', 'revision.created'],
        deployment_ids: null,
      });
      const scoped = await createWebhook('/scoped', {
        event_types: ['deployment.deleted'],
        deployment_ids: [other.id],
      });
      const d = await createImageDeployment(api, 'wh-signed', listenerId);
      await api.http.request('DELETE', `/v2/deployments/${other.id}`);
      await api.dataSource.query(`DELETE FROM deployments WHERE id = $1`, [other.id]);

      const mine = await eventually(
        () => received.filter((r) => r.path === '/signed'),
        (rs) => rs.length >= 2,
      );
      const events = (await api.http.get(`/v2/events?limit=100&deployment_id=${d.id}`)).body.resources;
      for (const r of mine) {
        expect(verify(r, hook.secret)).toBe(true);
        // Another first character (1 in 64 secrets already starts with any given one).
        expect(
          verify(
            r,
            hook.secret.replace(/^whsec_(.)/, (_: string, c: string) => `whsec_${c === 'A' ? 'B' : 'A'}`),
          ),
        ).toBe(false);
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.headers['content-length']).toBe(String(Buffer.byteLength(r.body)));
        expect(r.headers['transfer-encoding']).toBeUndefined();
        expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300);
        const body = JSON.parse(r.body);
        expect(body.deployment_id).toBe(d.id);
        expect(body).toEqual(events.find((e: any) => e.id === body.id));
      }
      expect(mine.map((r) => JSON.parse(r.body).type).sort()).toEqual(['deployment.created', 'revision.created']);
      expect(received.some((r) => r.path === '/signed' && r.body.includes(before.id))).toBe(false);

      const scopedGot = await eventually(
        () => received.filter((r) => r.path === '/scoped'),
        (rs) => rs.length >= 1,
      );
      expect(scopedGot.map((r) => JSON.parse(r.body))).toMatchObject([
        { type: 'deployment.deleted', deployment_id: other.id },
      ]);
      expect(verify(scopedGot[0]!, scoped.secret)).toBe(true);

      const listed = await eventually(
        () => deliveries(hook.id),
        (ds) => ds.length === 2 && ds.every((x) => x.status === 'succeeded'),
      );
      for (const delivery of listed) {
        expect(mine.find((r) => r.headers['webhook-id'] === delivery.id)).toBeDefined();
        expect(delivery.attempts).toMatchObject([{ round: 0, attempt: 1, response_status: 204, error: null }]);
      }
      for (const h of [hook, scoped]) await api.http.request('DELETE', `/v2/webhooks/${h.id}`);
    },
  );

  it(
    'a receiver failing twice gets the event on the third attempt, every attempt listed; ' +
      'redeliver sends it again with the same webhook-id',
    async () => {
      failures.set('/flaky', 2);
      const hook = await createWebhook('/flaky');
      const d = await createImageDeployment(api, 'wh-flaky', listenerId);
      const [delivery] = await eventually(
        () => deliveries(hook.id),
        (ds) => ds.length === 1 && ds[0].status === 'succeeded',
      );
      expect(delivery.event).toMatchObject({ type: 'deployment.created', deployment_id: d.id });
      expect(delivery.attempts.map((a: any) => [a.round, a.attempt, a.response_status])).toEqual([
        [0, 1, 500],
        [0, 2, 500],
        [0, 3, 204],
      ]);
      expect(delivery.attempts[0].error).toBe('answered 500');
      const got = received.filter((r) => r.path === '/flaky');
      expect(got).toHaveLength(3);
      expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([delivery.id]));
      for (const r of got) expect(verify(r, hook.secret)).toBe(true);

      const again = await api.http.post(`/v2/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`);
      expect(again.status, again.text).toBe(202);
      expect(again.body).toMatchObject({ id: delivery.id, status: 'pending' });
      const [redelivered] = await eventually(
        () => deliveries(hook.id),
        (ds) => ds[0].status === 'succeeded' && ds[0].attempts.length === 4,
      );
      expect(redelivered.attempts.at(-1)).toMatchObject({ round: 1, attempt: 1, response_status: 204 });
      const all = received.filter((r) => r.path === '/flaky');
      expect(all).toHaveLength(4);
      expect(all[3]!.headers['webhook-id']).toBe(delivery.id);
      expect(all[3]!.body).toBe(all[0]!.body);

      expect(
        (await api.http.post(`/v2/webhooks/${hook.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`))
          .status,
      ).toBe(404);
      expect((await foreign.post(`/v2/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`)).status).toBe(404);
      await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
    },
  );

  it("keeps a receiver's URL path (a Slack-style credential) out of attempt errors", async () => {
    const hook = await createWebhook('/services/T0001/B0002/hangup-s3cr3t-token');
    await createImageDeployment(api, 'wh-hangup', listenerId);
    const [delivery] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds.length === 1 && ds[0].status === 'succeeded',
    );
    expect(delivery.attempts).toHaveLength(2);
    expect(delivery.attempts[0].error).toMatch(/broke off/);
    expect(delivery.attempts[0].error).toContain(`${receiverUrl}/…`);
    expect(JSON.stringify(delivery.attempts)).not.toContain('s3cr3t');
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('a target that turns private after creation is refused at delivery: one attempt recorded, failed, no retry', async () => {
    const hook = await createWebhook('/turned-private');
    // As if its DNS now answered with an internal address: the guard checks at every delivery.
    await api.dataSource.query(`UPDATE outbound_webhooks SET url = 'https://10.255.0.1/hook' WHERE id = $1`, [hook.id]);
    await createImageDeployment(api, 'wh-private', listenerId);
    const [delivery] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds.length === 1 && ds[0].status === 'failed',
    );
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({ response_status: null });
    expect(delivery.attempts[0].error).toMatch(/private|10\.255\.0\.1/);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('the slack format posts a signed Slack message saying what happened', async () => {
    const hook = await createWebhook('/slack', { format: 'slack' });
    expect(hook.format).toBe('slack');
    const d = await createImageDeployment(api, 'wh-slack', listenerId);
    const [r] = await eventually(
      () => received.filter((x) => x.path === '/slack'),
      (rs) => rs.length >= 1,
    );
    expect(verify(r!, hook.secret)).toBe(true);
    expect(JSON.parse(r!.body)).toEqual({ text: `[Slipway] Deployment wh-slack (${d.id}) created.` });
    const [delivery] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds.length === 1 && ds[0].status === 'succeeded',
    );
    expect(delivery.event).toMatchObject({ type: 'deployment.created', deployment_id: d.id });
    expect((await api.http.patch(`/v2/webhooks/${hook.id}`, { format: 'standard' })).body.format).toBe('standard');
    expect((await api.http.patch(`/v2/webhooks/${hook.id}`, { format: 'teams' })).status).toBe(422);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('the slack format escapes user-controlled text: a status message cannot ping @channel or hide a link', async () => {
    const hook = await createWebhook('/slack-escaped', { format: 'slack', event_types: ['revision.status_changed'] });
    const d = await createImageDeployment(api, 'wh-slack-escaped', listenerId);
    // A status message is what an agent (or a failing image) says: here it tries Slack's control sequences.
    const message = 'Image pull failed <!channel> see <https://evil.example/login|the fix> & retry';
    const moved = await api.dataSource.transaction((m) =>
      api.flow.transition(m, d.latest_revision_id, 'INTERRUPTED', { message }),
    );
    expect(moved).not.toBeNull();
    const rs = await eventually(
      () => received.filter((x) => x.path === '/slack-escaped').map((x) => JSON.parse(x.body).text as string),
      (texts) => texts.some((t) => t.includes('INTERRUPTED')),
    );
    const text = rs.find((t) => t.includes('INTERRUPTED'))!;
    expect(text).toContain(
      'Image pull failed &lt;!channel&gt; see &lt;https://evil.example/login|the fix&gt; &amp; retry',
    );
    expect(text).not.toMatch(/[<>]/);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('a job that fails outside the handler (here: a secret that no longer opens) still ends its round as failed', async () => {
    const hook = await createWebhook('/broken-secret');
    await api.dataSource.query(`UPDATE outbound_webhooks SET secret_sealed = 'not-sealed' WHERE id = $1`, [hook.id]);
    await createImageDeployment(api, 'wh-broken-secret', listenerId);
    const [pending] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds.length === 1 && ds[0].attempts.length === 0,
    );
    expect(pending.status).toBe('pending');
    // Its own job would retry for a day; one with a single attempt shows the end at once (the
    // first job's later attempts then find the round over and do nothing).
    await api.queues.webhooks.add(
      'deliver.webhook',
      { deliveryId: pending.id, round: 0 },
      { attempts: 1, jobId: `webhook-${pending.id}-single` },
    );
    const [failed] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds[0].status === 'failed',
    );
    expect(failed.attempts).toEqual([]);
    expect(received.filter((r) => r.path === '/broken-secret')).toEqual([]);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('a pending delivery whose job Redis lost is enqueued again by the reconciler and delivered', async () => {
    const hook = await createWebhook('/lost-job');
    const deliveryId = randomUUID();
    // As if Redis lost its data after the relay handed the job over: the row, no job.
    await api.dataSource.query(
      `INSERT INTO outbound_deliveries (id, webhook_id, event_id, event_type, payload, updated_at)
       VALUES ($1, $2, 1, 'deployment.created', $3, now() - interval '10 minutes')`,
      [
        deliveryId,
        hook.id,
        JSON.stringify({
          id: '1',
          type: 'deployment.created',
          created_at: new Date().toISOString(),
          deployment_id: null,
          revision_id: null,
          data: {},
        }),
      ],
    );
    const reconciler = new Reconciler(
      api.dataSource,
      api.queues,
      api.flow,
      api.config.pipeline,
      createLogger({ name: 'reconciler', level: 'error' }),
    );
    expect((await reconciler.run()).webhookDeliveriesRequeued).toEqual([deliveryId]);
    const [delivery] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds.length === 1 && ds[0].status === 'succeeded',
    );
    expect(delivery.attempts).toMatchObject([{ round: 0, attempt: 1, response_status: 204 }]);
    expect(received.filter((r) => r.path === '/lost-job').map((r) => r.headers['webhook-id'])).toEqual([deliveryId]);
    // Its job exists now: another pass adds nothing.
    expect((await reconciler.run()).webhookDeliveriesRequeued).toEqual([]);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('fan-out loses no event and writes none twice: 20 concurrent creates, repeated passes', async () => {
    const hook = await createWebhook('/burst');
    await Promise.all(Array.from({ length: 20 }, (_, i) => createImageDeployment(api, `wh-burst-${i}`, listenerId)));
    await fanout.drain();
    await fanout.drain();
    const ds = await eventually(
      () => deliveries(hook.id),
      (x) => x.length === 20 && x.every((d) => d.status === 'succeeded'),
    );
    expect(new Set(ds.map((d) => d.event.deployment_id)).size).toBe(20);
    const got = received.filter((r) => r.path === '/burst');
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(20);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it(
    'a notified fan-out batches notifications: 40 creates in a row wake about one pass per ' +
      `${FANOUT_WAKE_BATCH_MS} ms, not one per event, and an event still reaches its webhook`,
    async () => {
      await fanout.stop(); // the harness's polling fan-out; this test's own is woken by notifications only
      const quiet = createLogger({ name: 'webhooks-batched-test', level: 'error' });
      const notifications = new PgNotifications(api.config.databaseUrl, [EVENTS_CHANNEL], quiet);
      const notified = new WebhookFanout(api.dataSource, quiet, 600_000, notifications);
      // Creates in a workspace with no webhook: each pass reads the due webhooks once and finds none.
      const { client: other } = await otherWorkspaceClient(api, 'webhooks-batched');
      const listener = await other.post('/v2/listeners', {
        compute_type: 'k8s',
        compute_id: 'batched',
        compute_config: { k8s_namespaces: ['agents'] },
      });
      expect(listener.status, listener.text).toBe(201);
      const recording = recordStatements();
      let hookId: string | undefined;
      try {
        notified.start();
        await eventually(
          async () => notifications.connected,
          (up) => up,
        );
        const started = Date.now();
        for (let i = 0; i < 40; i++) await createImageDeployment(other, `wh-batched-${i}`, listener.body.id);
        await new Promise((r) => setTimeout(r, 2 * FANOUT_WAKE_BATCH_MS)); // the last window's pass
        const elapsed = Date.now() - started;
        const passes = recording.sent.filter((t) => /FROM outbound_webhooks w\s+WHERE EXISTS/.test(t)).length;
        // About one pass per window, with slack for the first and the last; one per notification
        // made 60 here (measured with a window of 0).
        expect(passes).toBeLessThanOrEqual(Math.ceil(elapsed / FANOUT_WAKE_BATCH_MS) + 3);
        expect(passes).toBeGreaterThan(0);

        // Batched, not lost: a create's event reaches a webhook through this fan-out alone.
        const hook = await createWebhook('/batched');
        hookId = hook.id;
        const created = await createImageDeployment(api, 'wh-batched-delivered', listenerId);
        const ds = await eventually(
          () => deliveries(hook.id),
          (x) => x.length === 1 && x[0].status === 'succeeded',
        );
        expect(ds[0].event.deployment_id).toBe(created.id);
      } finally {
        recording.stop();
        await notified.stop();
        await notifications.close();
        fanout.start();
        if (hookId) await api.http.request('DELETE', `/v2/webhooks/${hookId}`);
      }
    },
  );
});
