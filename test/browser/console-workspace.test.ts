import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, hasChromium } from '../support/browser.js';
import {
  agentApplies as applied,
  closeBrowser,
  curlsShown,
  openConsolePage,
  signInAt,
} from '../support/console-page.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';
import { signatureOk, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * The console's workspace pages, each action done through the UI only: webhooks, API keys,
 * events, tags, quotas and listeners, against the real api (serving the console the test run's
 * global setup builds) and a real deployer process, which delivers webhooks to a receiver on
 * loopback (the outbound rules allow 127.0.0.1 here). Deployments are `external_container`
 * ones; the test plays the listener agent where a rollout must finish (it would run in a
 * customer's cluster). Screenshots go to test/browser/output/.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

let api: TestApi;
let deployer: ServiceProcess;
let listenerId: string;
let agent: HttpClient;
let receiver: WebhookReceiver;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api));
  listenerId = await createListener(api, `console-workspace-${randomUUID()}`, ['agents']);
  agent = api.http.as(await api.mintKey({ listenerId }));
  receiver = await startWebhookReceiver();
}, 90_000);

afterAll(async () => {
  await closeBrowser();
  await receiver?.close();
  await deployer?.stop();
  await api?.close();
});

const consoleUrl = () => `${api.baseUrl}/console/`;
const agentApplies = (revisionId: string) => applied(agent, listenerId, revisionId);

describe.runIf(hasChromium || browserRequired)('the console’s workspace pages, through the UI only', () => {
  it('creates a webhook, shows the delivery the receiver got, redelivers it with the same webhook-id, ' +
    'and sends a test delivery', async () => {
    const w = await openConsolePage();
    try {
      await signInAt(w.page, consoleUrl(), api.adminKey);
      await w.page.getByRole('link', { name: 'Webhooks' }).click();
      await w.page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      // A private address the server does not allow: the API's 422, next to the URL.
      await w.page.getByLabel('Receiver URL').fill('http://10.0.0.1/hook');
      await w.page.getByRole('button', { name: 'Create webhook' }).click();
      await w.page.locator('.field .field-error').first().waitFor();
      expect(await w.page.getByLabel('Receiver URL').getAttribute('aria-invalid')).toBe('true');

      await w.page.getByLabel('Receiver URL').fill(receiver.url);
      await w.page.getByLabel('deployment.created').check();
      await w.page.getByRole('button', { name: 'Create webhook' }).click();
      const secret = (await w.page.getByLabel("The webhook's signing secret").innerText()).trim();
      expect(secret).toMatch(/^whsec_/);
      const [hook] = (await api.http.get('/v2/webhooks')).body.resources;
      expect(hook).toMatchObject({
        url: receiver.url,
        event_types: expect.arrayContaining(['deployment.created', 'revision.status_changed']),
      });

      // An event happens; the deployer delivers it to the receiver.
      const d = await createImageDeployment(api, 'hooked', listenerId);
      const delivered = await eventually(
        async () => receiver.received.filter((r) => r.body.includes(d.id) && r.body.includes('deployment.created')),
        (rs) => rs.length === 1,
      );
      const signed = (r: WebhookReceiver['received'][number]) => signatureOk(r, secret);
      expect(signed(delivered[0]!)).toBe(true);

      const card = w.page.locator(`li[data-webhook-id="${hook.id}"]`);
      await card.getByRole('button', { name: 'Deliveries' }).click();
      const deliveryRow = card.locator(`tr[data-delivery-id="${delivered[0]!.headers['webhook-id']}"]`);
      await eventually(
        async () => {
          await card.getByRole('button', { name: 'Refresh deliveries' }).click();
          return deliveryRow.locator('[data-status="succeeded"]').count();
        },
        (n) => n === 1,
      );
      await deliveryRow.getByRole('button', { name: /^Redeliver event/ }).click();
      const again = await eventually(
        async () => receiver.received.filter((r) => r.headers['webhook-id'] === delivered[0]!.headers['webhook-id']),
        (rs) => rs.length === 2,
      );
      expect(again[1]!.body).toBe(delivered[0]!.body);
      expect(signed(again[1]!)).toBe(true);
      const curls = await curlsShown(w.page, card);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-webhooks.png'), fullPage: true });
      expect(curls[0]).toContain(
        `curl -X POST '${api.baseUrl}/v2/webhooks/${hook.id}/deliveries/${delivered[0]!.headers['webhook-id']}/redeliver'`,
      );
      expect(curls[0]).toContain("-d '{}'");

      // A test delivery: one signed `webhook.test` POST to this webhook, and the history, which
      // re-reads itself while the delivery is pending, shows it succeeded without a refresh.
      const before = receiver.received.length;
      await card.getByRole('button', { name: 'Send test delivery' }).click();
      await card.getByText('Test delivery queued').waitFor();
      const tests = await eventually(
        async () => receiver.received.slice(before).filter((r) => JSON.parse(r.body).type === 'webhook.test'),
        (rs) => rs.length === 1,
      );
      const testEvent = JSON.parse(tests[0]!.body);
      expect(testEvent).toMatchObject({ type: 'webhook.test', deployment_id: null, data: { webhook_id: hook.id } });
      expect(signed(tests[0]!)).toBe(true);
      const testRow = card.locator(`tr[data-delivery-id="${tests[0]!.headers['webhook-id']}"]`);
      await testRow.locator('[data-status="succeeded"]').waitFor({ timeout: 20_000 });
      expect(await testRow.getByRole('rowheader').innerText()).toContain('webhook.test');
      const testCall = card.locator('details.api-call').first();
      await testCall.locator('summary').click();
      expect(await testCall.getByLabel('The call as a curl command').innerText()).toContain(
        `curl -X POST '${api.baseUrl}/v2/webhooks/${hook.id}/test'`,
      );
      expect(w.errors.filter((e) => !/status of 422/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('creates an API key shown once, and revokes it after a confirmation: the key then gets 401', async () => {
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/api-keys`, api.adminKey, 'API keys');
      await w.page.getByLabel('Description').fill('made in the console');
      await w.page.getByRole('button', { name: 'Create key' }).click();
      const key = (await w.page.getByLabel('The new API key').innerText()).trim();
      expect((await api.http.as(key).get('/v2/deployments')).status).toBe(200);
      const [curl] = await curlsShown(w.page);
      expect(curl).toContain(`curl -X POST '${api.baseUrl}/v2/api-keys'`);
      expect(curl).not.toContain(key);

      // Shown once: after a reload the page has its prefix only.
      await w.page.reload();
      await w.page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
      const card = w.page.locator('li.card', { hasText: 'made in the console' });
      await card.waitFor();
      expect(await w.page.content()).not.toContain(key);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-api-keys.png'), fullPage: true });
      await card.getByRole('button', { name: /^Revoke key/ }).click();
      const confirm = w.page.getByRole('dialog', { name: 'Revoke key?' });
      await confirm.getByRole('button', { name: 'Cancel' }).click();
      expect((await api.http.as(key).get('/v2/deployments')).status).toBe(200);
      await card.getByRole('button', { name: /^Revoke key/ }).click();
      await confirm.getByRole('button', { name: 'Revoke key' }).click();
      await card.waitFor({ state: 'detached' });
      expect((await api.http.as(key).get('/v2/deployments')).status).toBe(401);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('lists the workspace’s events and filters them by deployment, the filter in the address', async () => {
    const d = await createImageDeployment(api, 'eventful', listenerId);
    await agentApplies(d.latest_revision_id);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/events`, api.adminKey, 'Events');
      const rows = w.page.locator('table.events tbody tr');
      const shownIds = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-event-id')));
      const other = await createImageDeployment(api, 'other-eventful', listenerId);
      // Unfiltered: both deployments' events, named (not by id), the newer ones added on top as they happen.
      const named = (name: string) => rows.getByRole('link', { name, exact: true });
      await eventually(
        async () => [await named('eventful').count(), await named('other-eventful').count()],
        ([mine, theirs]) => mine! > 0 && theirs! > 0,
      );
      expect(await named('other-eventful').first().getAttribute('href')).toBe(`#/deployments/${other.id}`);
      const unfiltered = (await shownIds()) as string[];
      expect(unfiltered).toEqual([...unfiltered].sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : -1)));
      await w.page.getByLabel('Deployment ID').fill(d.id);
      await w.page.getByRole('button', { name: 'Filter' }).click();
      expect(w.page.url()).toContain(`#/events?deployment_id=${d.id}`);
      const ids = (await api.http.get(`/v2/events?deployment_id=${d.id}&limit=100`)).body.resources.map(
        (e: { id: string }) => e.id,
      );
      expect(ids.length).toBeGreaterThanOrEqual(3);
      const newestFirst = [...ids].reverse();
      await eventually(shownIds, (shown) => JSON.stringify(shown) === JSON.stringify(newestFirst));
      // Newest first (the API's commit order reversed), which the equality above checks.
      const texts = await rows.allInnerTexts();
      expect(texts.some((t) => /deployment\.created/.test(t))).toBe(true);
      // A status change carries no name: the page looks the deployment up and names it.
      const deployed = rows.filter({ hasText: /revision\.status_changed/ }).filter({ hasText: /DEPLOYED/ });
      expect(await deployed.count()).toBeGreaterThan(0);
      expect(await deployed.first().getByRole('link', { name: 'eventful', exact: true }).getAttribute('href')).toBe(
        `#/deployments/${d.id}`,
      );
      expect(texts.every((t) => !t.includes(d.id.slice(0, 8)) && !t.includes('other-eventful'))).toBe(true);
      // The filter is in the address: a reload keeps it.
      await w.page.reload();
      await w.page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
      await eventually(shownIds, (shown) => JSON.stringify(shown) === JSON.stringify(newestFirst));
      expect(await w.page.getByLabel('Deployment ID').inputValue()).toBe(d.id);
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-events.png'), fullPage: true });
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('manages tag keys and values, registers and deletes a listener, and shows a workspace admin why quotas stay as they are', async () => {
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/workspace`, api.adminKey, 'Tags and quotas');
      await w.page.getByLabel('New tag key').fill('team');
      await w.page.getByRole('button', { name: 'Create key' }).click();
      const card = w.page.locator('li.card', { has: w.page.getByRole('heading', { name: 'team' }) });
      await card.getByLabel('New value of team').fill('search');
      await card.getByRole('button', { name: 'Add value' }).click();
      await card.getByRole('list', { name: 'Values of team' }).getByText('search').waitFor();
      const [key] = (await api.http.get('/v2/tags/keys')).body.resources;
      expect(key.key).toBe('team');
      expect(
        (await api.http.get(`/v2/tags/keys/${key.id}/values`)).body.resources.map((v: { value: string }) => v.value),
      ).toEqual(['search']);
      const squad = w.page.locator(`li[data-tag-key-id="${key.id}"]`);
      await squad.getByRole('button', { name: 'Rename' }).click();
      await squad.getByLabel('New name of team').fill('squad');
      await squad.getByRole('button', { name: 'Rename' }).click();
      await squad.getByRole('heading', { name: 'squad' }).waitFor();
      expect((await api.http.get(`/v2/tags/keys/${key.id}`)).body.key).toBe('squad');
      await squad.getByRole('button', { name: 'Delete tag key squad' }).click();
      await w.page
        .getByRole('dialog', { name: 'Delete tag key?' })
        .getByRole('button', { name: 'Delete tag key' })
        .click();
      await squad.waitFor({ state: 'detached' });
      expect((await api.http.get('/v2/tags/keys')).body.resources).toEqual([]);

      // Quotas: this is a workspace admin key; the API's refusal shows, nothing changes.
      const before = (await api.http.get(`/v2/workspaces/${api.workspaceId}/quotas`)).body;
      // Sizes read in human units, the exact number of bytes in the title; what is typed is converted too.
      const uploadBytes = before.quotas.upload_bytes as number;
      expect(uploadBytes).toBeGreaterThan(1024);
      const uploadHint = w.page.locator('.field', { has: w.page.getByLabel('Upload size (bytes)') }).locator('.hint');
      expect(await uploadHint.innerText()).toMatch(/^In force: \d+(\.\d+)? (KiB|MiB|GiB)$/);
      expect(await uploadHint.locator('[title]').getAttribute('title')).toBe(
        `${uploadBytes.toLocaleString('en')} bytes`,
      );
      await w.page.getByLabel('Upload size (bytes)').fill('1536');
      expect(await uploadHint.innerText()).toMatch(/; entered: 1\.5 KiB$/);
      await w.page.getByLabel('Upload size (bytes)').fill('');
      await w.page.getByLabel('Deployments', { exact: true }).fill('7');
      await w.page.getByRole('button', { name: 'Save quotas' }).click();
      await w.page.getByRole('alert').filter({ hasText: /admin/i }).waitFor();
      expect((await api.http.get(`/v2/workspaces/${api.workspaceId}/quotas`)).body).toEqual(before);

      await w.page.getByRole('link', { name: 'Listeners and integrations' }).click();
      await w.page.getByLabel('Compute ID').fill('cluster-from-the-console');
      await w.page.getByLabel('Namespaces').fill('apps, jobs');
      await w.page.getByRole('button', { name: 'Register' }).click();
      const row = w.page.getByRole('row', { name: /cluster-from-the-console/ });
      await row.waitFor();
      const made = (await api.http.get('/v2/listeners?limit=100')).body.resources.find(
        (l: { compute_id: string }) => l.compute_id === 'cluster-from-the-console',
      );
      expect(made.compute_config.k8s_namespaces).toEqual(['apps', 'jobs']);
      await row.getByRole('button', { name: 'Delete listener cluster-from-the-console' }).click();
      await w.page
        .getByRole('dialog', { name: 'Delete listener?' })
        .getByRole('button', { name: 'Delete listener' })
        .click();
      await row.waitFor({ state: 'detached' });
      expect((await api.http.get(`/v2/listeners/${made.id}`)).status).toBe(404);
      expect(w.errors.filter((e) => !/status of 403/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});

mkdirSync(OUTPUT, { recursive: true });
