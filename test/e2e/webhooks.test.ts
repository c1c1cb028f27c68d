import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';
import { signatureOk, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Outbound webhooks from the real processes (docs/architecture.md, Events): the deployer's and
 * the builder's own fan-out and `webhooks` worker deliver, each alone, with nothing run in
 * this test's process but the api and a receiver.
 */
let api: TestApi;
let listenerId: string;
let receiver: WebhookReceiver;
let receiverUrl: string;
let received: WebhookReceiver['received'];
const running: ServiceProcess[] = [];

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
  api.relay.start();
  listenerId = await createListener(api, 'webhooks-e2e');
  receiver = await startWebhookReceiver();
  ({ url: receiverUrl, received } = receiver);
}, 60_000);

afterAll(async () => {
  for (const p of running) await p.stop();
  await receiver?.close();
  await api?.close();
});

describe('webhook deliveries by the worker processes', () => {
  it('the deployer delivers; after it stops, a builder alone delivers what happened meanwhile', async () => {
    const hook = (await api.http.post('/v2/webhooks', { url: receiverUrl, event_types: ['deployment.created'] })).body;
    expect(hook.secret).toBeDefined();

    const deployer = await startService('deployer', serviceEnv(api));
    running.push(deployer);
    const first = await createImageDeployment(api, 'e2e-hook-1', listenerId);
    const one = await eventually(
      async () => received.filter((r) => r.body.includes(first.id)),
      (rs) => rs.length === 1,
    );
    expect(signatureOk(one[0]!, hook.secret)).toBe(true);
    await deployer.stop();

    // No worker process runs: the event waits in Postgres.
    const second = await createImageDeployment(api, 'e2e-hook-2', listenerId);
    const builder = await startService('builder', serviceEnv(api));
    running.push(builder);
    const two = await eventually(
      async () => received.filter((r) => r.body.includes(second.id)),
      (rs) => rs.length === 1,
    );
    expect(signatureOk(two[0]!, hook.secret)).toBe(true);
    expect(JSON.parse(two[0]!.body)).toMatchObject({
      type: 'deployment.created',
      deployment_id: second.id,
      data: { name: 'e2e-hook-2' },
    });
    const deliveries = await eventually(
      async () => (await api.http.get(`/v2/webhooks/${hook.id}/deliveries`)).body.resources as any[],
      (ds) => ds.length === 2 && ds.every((d) => d.status === 'succeeded'),
    );
    expect(deliveries.map((d) => d.event.deployment_id).sort()).toEqual([first.id, second.id].sort());
  }, 90_000);
});
