import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhook-harness.js';
import { signatureOk } from '../support/webhook-receiver.js';

/**
 * Test deliveries (`POST /v2/webhooks/{id}/test`, docs/api.md, Events and webhooks), end to
 * end: the real api, the outbox relay, the fan-out and the `webhooks` worker on real Redis, and
 * a real HTTP receiver on loopback (allow-listed) that answers 500 under `/broken`, 204
 * elsewhere. The signature is checked with an HMAC computed independently of the code under test.
 */

let api: TestApi;
let harness: WebhookHarness;
let foreign: HttpClient;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_RETRY_BASE_MS: '100' });
  ({ client: foreign } = await otherWorkspaceClient(api, 'webhook-test-other'));
  harness = await startWebhookHarness(api, (path, res) => res.writeHead(path.startsWith('/broken') ? 500 : 204).end());
});

afterAll(async () => {
  await harness?.close();
  await api?.close();
});

const createWebhook = (path: string, eventTypes = ['deployment.created']) =>
  harness.createWebhook(path, { event_types: eventTypes });
const deliveries = (webhookId: string) => harness.deliveries(webhookId);
const at = (path: string) => harness.received.filter((r) => r.path === path);

describe('POST /v2/webhooks/{id}/test', () => {
  it(
    'sends that webhook alone one signed webhook.test delivery, listed as succeeded, redeliverable, ' +
      'and kept out of the event feed',
    async () => {
      const hook = await createWebhook('/tested');
      const bystander = await createWebhook('/bystander', [
        'deployment.created',
        'deployment.deleted',
        'revision.status_changed',
      ]);

      const res = await api.http.post(`/v2/webhooks/${hook.id}/test`);
      expect(res.status, res.text).toBe(202);
      expect(res.body).toMatchObject({
        webhook_id: hook.id,
        event_type: 'webhook.test',
        status: 'pending',
        attempts: [],
      });
      const deliveryId = res.body.id as string;

      const [delivery] = await eventually(
        () => deliveries(hook.id),
        (ds) => ds.length === 1 && ds[0].status === 'succeeded',
      );
      expect(delivery.id).toBe(deliveryId);
      expect(delivery.attempts).toMatchObject([{ round: 0, attempt: 1, response_status: 204, error: null }]);

      const got = at('/tested');
      expect(got).toHaveLength(1);
      const [r] = got;
      expect(r!.headers['webhook-id']).toBe(deliveryId);
      expect(signatureOk(r!, hook.secret)).toBe(true);
      expect(r!.headers['user-agent']).toBe('Slipway-Webhooks/1');
      const body = JSON.parse(r!.body);
      expect(body).toEqual({
        id: delivery.event_id,
        type: 'webhook.test',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        deployment_id: null,
        revision_id: null,
        data: { webhook_id: hook.id, requested_by: expect.stringMatching(/^api-key:/) },
      });
      expect(delivery.event).toEqual(body);

      // The fan-out has nothing to send anywhere: the test is not a workspace event.
      await harness.fanout.drain();
      expect(await deliveries(bystander.id)).toEqual([]);
      expect(at('/bystander')).toEqual([]);
      const feed = await api.http.get('/v2/events?limit=100');
      expect(feed.status, feed.text).toBe(200);
      expect(feed.body.resources.map((e: any) => e.id)).not.toContain(delivery.event_id);

      const again = await api.http.post(`/v2/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
      expect(again.status, again.text).toBe(202);
      await eventually(
        () => deliveries(hook.id),
        (ds) => ds[0].status === 'succeeded' && ds[0].attempts.length === 2,
      );
      expect(at('/tested')).toHaveLength(2);
      expect(at('/tested')[1]!.headers['webhook-id']).toBe(deliveryId);
      expect(at('/tested')[1]!.body).toBe(r!.body);

      for (const h of [hook, bystander]) await api.http.request('DELETE', `/v2/webhooks/${h.id}`);
    },
  );

  it('a receiver answering 500 shows failed attempts on a pending delivery, which cannot be redelivered until it ends', async () => {
    const hook = await createWebhook('/broken');
    const res = await api.http.post(`/v2/webhooks/${hook.id}/test`);
    expect(res.status, res.text).toBe(202);
    const [delivery] = await eventually(
      () => deliveries(hook.id),
      (ds) => ds.length === 1 && ds[0].attempts.length >= 2,
    );
    expect(delivery.status).toBe('pending');
    for (const a of delivery.attempts)
      expect(a).toMatchObject({ round: 0, response_status: 500, error: 'answered 500' });
    const got = at('/broken');
    expect(got.length).toBeGreaterThanOrEqual(2);
    for (const r of got) {
      expect(r.headers['webhook-id']).toBe(res.body.id);
      expect(signatureOk(r, hook.secret)).toBe(true);
    }
    expect((await api.http.post(`/v2/webhooks/${hook.id}/deliveries/${res.body.id}/redeliver`)).status).toBe(409);
    // Deleting the webhook drops the retries still queued.
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });

  it('404 for an unknown webhook or one of another workspace, 403 for a member key, and nothing is sent', async () => {
    const hook = await createWebhook('/guarded');
    expect((await api.http.post('/v2/webhooks/00000000-0000-4000-8000-000000000000/test')).status).toBe(404);
    const foreignTry = await foreign.post(`/v2/webhooks/${hook.id}/test`);
    expect(foreignTry.status).toBe(404);
    expect(foreignTry.body).toEqual({ detail: `Webhook ID ${hook.id} not found.` });
    const member = api.http.as(await api.mintKey({ role: 'member' }));
    expect((await member.post(`/v2/webhooks/${hook.id}/test`)).status).toBe(403);
    expect((await api.http.post('/v2/webhooks/not-a-uuid/test')).status).toBe(422);
    expect(await deliveries(hook.id)).toEqual([]);
    expect(at('/guarded')).toEqual([]);
    await api.http.request('DELETE', `/v2/webhooks/${hook.id}`);
  });
});
