import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, hasChromium } from '../support/browser.js';
import {
  agentApplies as applied,
  closeBrowser,
  curlsShown,
  openConsolePage,
  pageWidth,
  signInAt,
} from '../support/console-page.js';
import { craftTarball } from '../support/crafted-tarball.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { repohostFixture } from '../support/git-fixtures.js';
import type { HttpClient } from '../support/http.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The console's deployment actions (create, edit, tag, redeploy, interrupt), each done through the UI
 * only, against the real api (serving the console the test run's global setup builds) and a real
 * deployer process. Image deployments are `external_container` ones: the test plays the listener
 * agent over the agent protocol (it would run in a customer's cluster), so it decides when a
 * rollout is healthy and sees the secret values it is handed. Nothing builds (no builder runs):
 * the repository and upload cases check the revision the API made. The workspace's other
 * resources are console-workspace.test.ts. Screenshots go to test/browser/output/.
 */
const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');

let api: TestApi;
let deployer: ServiceProcess;
let listenerId: string;
let computeId: string;
let agent: HttpClient;

beforeAll(async () => {
  api = await startTestApi();
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api));
  computeId = `console-actions-${randomUUID()}`;
  listenerId = await createListener(api, computeId, ['agents']);
  agent = api.http.as(await api.mintKey({ listenerId }));
}, 90_000);

afterAll(async () => {
  await closeBrowser();
  await deployer?.stop();
  await api?.close();
});

const consoleUrl = () => `${api.baseUrl}/console/`;
const agentApplies = (revisionId: string) => applied(agent, listenerId, revisionId);
const deploymentOf = async (id: string) => (await api.http.get(`/v2/deployments/${id}`)).body;

/** The secret values the agent is handed for `revisionId` (the only place values are readable). */
async function secretsGiven(revisionId: string): Promise<Array<{ name: string; value: string }>> {
  const entries = await eventually(
    async () =>
      (await agent.get(`/v2/listeners/${listenerId}/desired-state`)).body.deployments as Array<{
        revision_id: string;
        secrets: Array<{ name: string; value: string }>;
      }>,
    (es) => es.some((e) => e.revision_id === revisionId),
  );
  return entries.find((e) => e.revision_id === revisionId)!.secrets;
}

/** From the deployments list: the create form, filled in for an image this file's listener runs. */
async function startImageDeployment(page: Page, name: string): Promise<void> {
  await page.getByRole('link', { name: 'Create a deployment' }).click();
  await page.getByRole('heading', { name: 'Create a deployment', level: 1 }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Source').selectOption('external_container');
  await page.getByLabel('Image').fill('registry.example/agent:1');
  await page.getByLabel('Listener').selectOption({ label: computeId });
}

describe.runIf(hasChromium || browserRequired)('console actions, through the UI only', () => {
  it('creates a deployment from an image, shows a 422 next to its field, then a secret edit rolls out a new revision', async () => {
    const first = `first-${randomUUID()}`;
    const second = `second-${randomUUID()}`;
    const w = await openConsolePage();
    try {
      await signInAt(w.page, consoleUrl(), api.adminKey);
      // The form's own check first: a name the API would refuse.
      await startImageDeployment(w.page, 'Not A Name');
      expect(await w.page.getByLabel('Namespace').inputValue()).toBe('agents');
      await w.page.getByRole('button', { name: 'Add a secret' }).click();
      await w.page.getByLabel('Secret name 1').fill('PORT');
      await w.page.getByLabel('Value of secret PORT').fill(first);
      await w.page.getByRole('button', { name: 'Create deployment' }).click();
      await w.page.getByText('Lowercase letters, digits and -, 3–63 characters').waitFor();
      expect(await w.page.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBe('true');

      // Then the API's 422: PORT is reserved; its message stands on that secret's row.
      await w.page.getByLabel('Name', { exact: true }).fill('made-in-the-console');
      await w.page.getByRole('button', { name: 'Create deployment' }).click();
      const row = w.page.locator('.secret-row').first();
      await row.locator('.field-error').waitFor();
      expect(await row.locator('.field-error').innerText()).toMatch(/PORT/);
      expect((await api.http.get('/v2/deployments?name=made-in-the-console')).body.resources).toEqual([]);

      await w.page.getByLabel('Secret name 1').fill('OPENAI_API_KEY');
      await w.page.getByLabel('Value of secret OPENAI_API_KEY').fill(first);
      await w.page.getByRole('button', { name: 'Create deployment' }).click();
      // Created: the form is gone, the new deployment's page is open with its first revision's log
      // (an image has no build: its deploy log), the create call still shown there.
      await w.page.getByRole('heading', { name: 'made-in-the-console', level: 1 }).waitFor();
      const created = w.page.getByRole('status').filter({ hasText: 'Created' });
      await created.waitFor();
      const [made] = (await api.http.get('/v2/deployments?name=made-in-the-console')).body.resources;
      expect(new URL(w.page.url()).hash).toBe(`#/deployments/${made.id}?log=latest`);
      expect(await w.page.getByLabel('Name', { exact: true }).count()).toBe(0);
      const firstLog = w.page.getByRole('region', { name: `Log of revision ${made.latest_revision_id.slice(0, 8)}` });
      await firstLog.getByRole('log', { name: 'deploy log' }).waitFor();
      expect(await firstLog.getByRole('radio', { name: 'Deploy' }).isChecked()).toBe(true);
      expect(await firstLog.getByRole('link', { name: 'Open in the log view' }).getAttribute('href')).toBe(
        `#/deployments/${made.id}/revisions/${made.latest_revision_id}/logs?type=deploy`,
      );
      await w.page.screenshot({ path: path.join(OUTPUT, 'console-create.png'), fullPage: true });
      expect(made).toMatchObject({
        source: 'external_container',
        source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'agents' } },
        secrets: [{ name: 'OPENAI_API_KEY' }],
      });
      expect(await secretsGiven(made.latest_revision_id)).toEqual([{ name: 'OPENAI_API_KEY', value: first }]);
      // The call as curl: method, URL, the key as a variable, the body without the secret's value.
      const [curl] = await curlsShown(w.page);
      expect(curl).toContain(`curl -X POST '${api.baseUrl}/v2/deployments'`);
      expect(curl).toContain('-H "X-Api-Key: $SLIPWAY_API_KEY"');
      expect(curl).toContain('"image_uri":"registry.example/agent:1"');
      expect(curl).toContain('"value":"<value of OPENAI_API_KEY>"');
      expect(await w.page.content()).not.toContain(api.adminKey);
      await agentApplies(made.latest_revision_id);

      // Edit the secret on the deployment's page: a new revision rolls out with the new value.
      await w.page.locator(`li.is-active[data-revision-id="${made.latest_revision_id}"]`).waitFor();
      await w.page.getByRole('heading', { name: 'Edit configuration, resources and secrets' }).click();
      await w.page.getByLabel('New value of OPENAI_API_KEY').fill(second);
      await w.page.getByRole('button', { name: 'Save and roll out' }).click();
      const saved = w.page.getByRole('status').filter({ hasText: 'rolls out the change' });
      await saved.waitFor();
      const after = await deploymentOf(made.id);
      expect(after.latest_revision_id).not.toBe(made.latest_revision_id);
      expect(await saved.innerText()).toContain(after.latest_revision_id);
      expect(await secretsGiven(after.latest_revision_id)).toEqual([{ name: 'OPENAI_API_KEY', value: second }]);
      const [patch] = await curlsShown(
        w.page,
        w.page.getByRole('form', { name: 'Edit configuration, resources and secrets' }),
      );
      expect(patch).toContain(`curl -X PATCH '${api.baseUrl}/v2/deployments/${made.id}'`);
      expect(patch).toContain('"secrets":[{"name":"OPENAI_API_KEY","value":"<value of OPENAI_API_KEY>"}]');
      await agentApplies(after.latest_revision_id);
      await w.page
        .locator(`li.is-active[data-revision-id="${after.latest_revision_id}"] [data-status="DEPLOYED"]`)
        .waitFor();
      // The values typed went to the API only: nowhere on the page.
      const html = await w.page.content();
      expect(html).not.toContain(first);
      expect(html).not.toContain(second);
      // The browser reports the 422 the test provoked; nothing else went wrong.
      expect(w.errors.filter((e) => !/status of 422/.test(e))).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('creates deployments from a repository of an integration and from an uploaded tarball', async () => {
    const fixture = await repohostFixture(api);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/new`, api.adminKey, 'Create a deployment');
      await w.page.getByLabel('Name', { exact: true }).fill('from-a-repository');
      await w.page.getByLabel('Integration').selectOption({ label: 'fixture-repos (local)' });
      await w.page.getByLabel('Repository').selectOption(fixture.repoUrl);
      await w.page.getByLabel('Branch').selectOption('main');
      await w.page.getByRole('button', { name: 'Create deployment' }).click();
      await w.page.getByRole('heading', { name: 'from-a-repository', level: 1 }).waitFor();
      await w.page.getByRole('status').filter({ hasText: 'Created' }).waitFor();
      const [repo] = (await api.http.get('/v2/deployments?name=from-a-repository')).body.resources;
      // Built here: its first revision's build log is open on the page.
      const buildLog = w.page.getByRole('region', { name: `Log of revision ${repo.latest_revision_id.slice(0, 8)}` });
      await buildLog.getByRole('log', { name: 'build log' }).waitFor();
      expect(await buildLog.getByRole('radio', { name: 'Build' }).isChecked()).toBe(true);
      expect(repo).toMatchObject({
        source: 'repohost',
        source_config: { integration_id: fixture.integrationId, repo_url: fixture.repoUrl },
        source_revision_config: { repo_ref: 'main' },
      });
      expect(repo.latest_revision_id).toEqual(expect.any(String));

      // An upload: create, signed URL, PUT of the file, then the PATCH that makes a revision of it.
      // Away and back: a fresh, empty form.
      await w.page.goto(`${consoleUrl()}#/`);
      await w.page.goto(`${consoleUrl()}#/deployments/new`);
      await w.page.getByRole('heading', { name: 'Create a deployment', level: 1 }).waitFor();
      await w.page.getByLabel('Name', { exact: true }).fill('from-an-upload');
      await w.page.getByLabel('Source').selectOption('upload');
      const tarball = craftTarball([{ path: 'langgraph.json', body: '{"graphs":{"agent":"./agent.js:graph"}}' }]);
      await w.page
        .getByLabel('Source tarball (.tar.gz)')
        .setInputFiles({ name: 'project.tar.gz', mimeType: 'application/gzip', buffer: tarball });
      await w.page.getByRole('button', { name: 'Create deployment' }).click();
      await w.page.getByRole('heading', { name: 'from-an-upload', level: 1 }).waitFor();
      await w.page.getByRole('status').filter({ hasText: 'Created' }).waitFor();
      const [upload] = (await api.http.get('/v2/deployments?name=from-an-upload')).body.resources;
      expect(upload.source).toBe('upload');
      expect(upload.source_revision_config.source_tarball_path).toMatch(new RegExp(`^uploads/${upload.id}/`));
      expect(upload.latest_revision_id).toEqual(expect.any(String));
      const curls = await curlsShown(w.page);
      expect(curls.map((c) => c.split(' ')[2])).toEqual(['POST', 'POST', 'PUT', 'PATCH']);
      expect(curls[2]).toContain('--data-binary @project.tar.gz');
      expect(curls[2]).not.toContain('X-Api-Key');
      expect(curls[2]).toContain('?<signed token>');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('redeploys an older revision picked from the revision list, and interrupts a running one after a confirmation', async () => {
    const d = await createImageDeployment(api, 'redeploy-from-list', listenerId, { image: 'registry.example/agent:1' });
    await agentApplies(d.latest_revision_id);
    const second = (
      await api.http.patch(`/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: 'registry.example/agent:2' },
      })
    ).body.latest_revision_id as string;
    await agentApplies(second);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${d.id}`, api.adminKey, 'redeploy-from-list');
      await w.page.getByRole('button', { name: `Roll back to revision ${d.latest_revision_id.slice(0, 8)}` }).click();
      const dialog = w.page.getByRole('dialog', { name: `Roll back to revision ${d.latest_revision_id.slice(0, 8)}` });
      await dialog.getByRole('button', { name: 'Roll back', exact: true }).click();
      await w.page.getByRole('status').filter({ hasText: 'Rolling back' }).waitFor();
      const third = (await deploymentOf(d.id)).latest_revision_id as string;
      expect((await api.http.get(`/v2/deployments/${d.id}/revisions/${third}`)).body).toMatchObject({
        redeployed_from: d.latest_revision_id,
        image_uri: 'registry.example/agent:1',
      });
      const [redeploy] = await curlsShown(w.page);
      expect(redeploy).toContain(
        `curl -X POST '${api.baseUrl}/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy'`,
      );
      await agentApplies(third);
      await w.page.locator(`li.is-active[data-revision-id="${third}"] [data-status="DEPLOYED"]`).waitFor();

      // A change the agent never applies stays in flight: interrupt it from the page, which asks
      // first (naming the revision and the one that keeps serving); Cancel leaves it running.
      const fourth = (
        await api.http.patch(`/v2/deployments/${d.id}`, {
          source_revision_config: { image_uri: 'registry.example/agent:3' },
        })
      ).body.latest_revision_id as string;
      const interrupt = w.page.getByRole('button', { name: 'Interrupt the running revision' });
      const confirm = w.page.getByRole('dialog', { name: 'Interrupt?' });
      await interrupt.click();
      expect(await confirm.innerText()).toContain(`Interrupt revision ${fourth}`);
      expect(await confirm.innerText()).toContain(`revision ${third} keeps serving`);
      await confirm.getByRole('button', { name: 'Cancel' }).click();
      await confirm.waitFor({ state: 'hidden' });
      expect((await api.http.get(`/v2/deployments/${d.id}/revisions/${fourth}`)).body.status).not.toBe('INTERRUPTED');
      await interrupt.click();
      await confirm.getByRole('button', { name: 'Interrupt', exact: true }).click();
      await w.page
        .getByRole('status')
        .filter({ hasText: `Revision ${fourth} interrupted.` })
        .waitFor();
      expect((await api.http.get(`/v2/deployments/${d.id}/revisions/${fourth}`)).body.status).toBe('INTERRUPTED');
      expect((await deploymentOf(d.id)).active_revision_id).toBe(third);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);

  it('edits configuration and resources on a deployment’s page: a new revision for the image and resources, ' +
    'commands in place', async () => {
    const d = await createImageDeployment(api, 'edited-in-the-console', listenerId, {
      image: 'registry.example/agent:1',
    });
    await agentApplies(d.latest_revision_id);
    const fixture = await repohostFixture(api);
    const built = await api.http.post('/v2/deployments', {
      name: 'commands-in-place',
      source: 'repohost',
      source_config: { integration_id: fixture.integrationId, repo_url: fixture.repoUrl, build_on_push: false },
      source_revision_config: { repo_ref: 'main' },
    });
    expect(built.status, built.text).toBe(201);
    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${consoleUrl()}#/deployments/${d.id}`, api.adminKey, 'edited-in-the-console');
      await w.page.locator(`li.is-active[data-revision-id="${d.latest_revision_id}"]`).waitFor();
      await w.page.getByRole('heading', { name: 'Edit configuration, resources and secrets' }).click();
      const form = w.page.getByRole('form', { name: 'Edit configuration, resources and secrets' });
      await form.getByLabel('Image').fill('registry.example/agent:2');
      await form.getByLabel('Memory (MB)').fill('512');
      await form.getByLabel('Minimum instances').fill('3');
      await form.getByLabel('Maximum instances').fill('2');
      // The form's own check: nothing is sent while the minimum exceeds the maximum.
      await form.getByRole('button', { name: 'Save and roll out' }).click();
      await form.getByText('The minimum is at most the maximum.').waitFor();
      expect(await form.getByLabel('Minimum instances').getAttribute('aria-invalid')).toBe('true');
      expect((await deploymentOf(d.id)).latest_revision_id).toBe(d.latest_revision_id);

      await form.getByLabel('Maximum instances').fill('4');
      await form.getByRole('button', { name: 'Save and roll out' }).click();
      const saved = w.page.getByRole('status').filter({ hasText: 'rolls out the change' });
      await saved.waitFor();
      const after = await deploymentOf(d.id);
      expect(after.latest_revision_id).not.toBe(d.latest_revision_id);
      expect(await saved.innerText()).toContain(after.latest_revision_id);
      expect(after.source_config.resource_spec).toMatchObject({ memory_mb: 512, min_scale: 3, max_scale: 4 });
      expect(
        (await api.http.get(`/v2/deployments/${d.id}/revisions/${after.latest_revision_id}`)).body
          .source_revision_config.image_uri,
      ).toBe('registry.example/agent:2');
      const [patch] = await curlsShown(w.page, form);
      expect(patch).toContain(`curl -X PATCH '${api.baseUrl}/v2/deployments/${d.id}'`);
      // One PATCH with the image and the whole spec (a PATCH replaces it), the edited fields in it.
      expect(JSON.parse(/-d '(.*)'$/s.exec(patch)![1]!)).toMatchObject({
        source_revision_config: { image_uri: 'registry.example/agent:2' },
        source_config: { resource_spec: { memory_mb: 512, min_scale: 3, max_scale: 4 } },
      });
      await agentApplies(after.latest_revision_id);
      // The page shows what it now runs: the new resources in the configuration's summary.
      await w.page.getByRole('region', { name: 'Configuration' }).getByText('512 MB, scale 3–4').waitFor();

      // A repository deployment's commands change in place: the next build uses them, no revision now.
      await w.page.goto(`${consoleUrl()}#/deployments/${built.body.id}`);
      await w.page.getByRole('heading', { name: 'commands-in-place', level: 1 }).waitFor();
      await w.page.getByRole('heading', { name: 'Edit configuration, resources and secrets' }).click();
      await form.getByLabel('Install command').fill('npm ci --omit=dev');
      await form.getByLabel('Build command').fill('npm run build:prod');
      await form.getByRole('button', { name: 'Save and roll out' }).click();
      await w.page.getByRole('status').filter({ hasText: 'Saved: changed in place, no new revision.' }).waitFor();
      const commands = await deploymentOf(built.body.id);
      expect(commands.source_config).toMatchObject({
        install_command: 'npm ci --omit=dev',
        build_command: 'npm run build:prod',
      });
      expect(commands.latest_revision_id).toBe(built.body.latest_revision_id);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('tags a deployment from the create form, and changes its tag on its page without a new revision', async () => {
    const w = await openConsolePage();
    const tagsOf = async (id: string) =>
      (await api.http.get(`/v2/deployments/${id}/tags`)).body.resources.map(
        (t: { key: string; value: string }) => `${t.key}=${t.value}`,
      );
    try {
      // A key with two values, made on the workspace page.
      await signInAt(w.page, `${consoleUrl()}#/workspace`, api.adminKey, 'Tags and quotas');
      await w.page.getByLabel('New tag key').fill('team');
      await w.page.getByRole('button', { name: 'Create key' }).click();
      const card = w.page.locator('li.card', { has: w.page.getByRole('heading', { name: 'team' }) });
      for (const value of ['search', 'billing']) {
        await card.getByLabel('New value of team').fill(value);
        await card.getByRole('button', { name: 'Add value' }).click();
        await card.getByRole('list', { name: 'Values of team' }).getByText(value).waitFor();
      }

      await w.page.getByRole('navigation').getByRole('link', { name: 'Deployments' }).click();
      await startImageDeployment(w.page, 'tagged-in-the-console');
      await w.page.getByLabel('Tag team').selectOption({ label: 'search' });
      await w.page.getByRole('button', { name: 'Create deployment' }).click();
      const created = w.page.getByRole('status').filter({ hasText: 'Created' });
      await created.waitFor();
      const [made] = (await api.http.get('/v2/deployments?name=tagged-in-the-console')).body.resources;
      expect(await tagsOf(made.id)).toEqual(['team=search']);
      const curls = await curlsShown(w.page);
      expect(curls[1]).toContain(`curl -X PUT '${api.baseUrl}/v2/deployments/${made.id}/tags'`);
      await agentApplies(made.latest_revision_id);

      // On its page (where the create form led) the edit form shows the tag it carries; another value replaces it in place.
      await w.page.getByRole('heading', { name: 'tagged-in-the-console', level: 1 }).waitFor();
      await w.page.getByRole('heading', { name: 'Edit configuration, resources and secrets' }).click();
      const tag = w.page.getByLabel('Tag team');
      await tag.locator('option', { hasText: 'billing' }).waitFor({ state: 'attached' });
      expect(await tag.locator('option:checked').innerText()).toBe('search');
      await tag.selectOption({ label: 'billing' });
      await w.page.getByRole('button', { name: 'Save and roll out' }).click();
      await w.page.getByRole('status').filter({ hasText: 'Saved: changed in place, no new revision.' }).waitFor();
      expect(await tagsOf(made.id)).toEqual(['team=billing']);
      expect((await deploymentOf(made.id)).latest_revision_id).toBe(made.latest_revision_id);

      // None: the deployment carries no tag.
      await tag.selectOption({ label: 'None' });
      await w.page.getByRole('button', { name: 'Save and roll out' }).click();
      await eventually(
        () => tagsOf(made.id),
        (tags) => tags.length === 0,
      );
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);

  const PAGES: Array<[string, string]> = [
    ['#/deployments/new', 'Create a deployment'],
    ['#/webhooks', 'Webhooks'],
    ['#/api-keys', 'API keys'],
    ['#/events', 'Events'],
    ['#/workspace', 'Tags and quotas'],
  ];

  it('keeps the action pages clean for axe-core in dark mode, and fits them in 375 px', async () => {
    // Only to inject axe does this page bypass the policy.
    const dark = await openConsolePage({ colorScheme: 'dark', bypassCSP: true });
    try {
      await signInAt(dark.page, consoleUrl(), api.adminKey);
      for (const [hash, heading] of PAGES) {
        await dark.page.goto(`${consoleUrl()}${hash}`);
        await dark.page.getByRole('heading', { name: heading, level: 1 }).waitFor();
        await dark.page.waitForLoadState('networkidle');
        await dark.page.evaluate(axe.source);
        const audit = (await dark.page.evaluate(
          "axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })",
        )) as axe.AxeResults;
        expect(
          audit.violations.map((v) => `${hash}: ${v.id} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
        ).toEqual([]);
        expect(audit.passes.map((p) => p.id)).toContain('color-contrast');
      }
      expect(dark.errors).toEqual([]);
    } finally {
      await dark.close();
    }
    const phone = await openConsolePage({ viewport: { width: 375, height: 800 }, isMobile: true, hasTouch: true });
    try {
      await signInAt(phone.page, consoleUrl(), api.adminKey);
      for (const [hash, heading] of PAGES) {
        await phone.page.goto(`${consoleUrl()}${hash}`);
        await phone.page.getByRole('heading', { name: heading, level: 1 }).waitFor();
        await phone.page.waitForLoadState('networkidle');
        expect(await pageWidth(phone.page), hash).toBeLessThanOrEqual(375);
        await phone.page.screenshot({
          path: path.join(OUTPUT, `console-mobile-${hash.slice(2).replace(/\W+/g, '-')}.png`),
          fullPage: true,
        });
      }
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  }, 90_000);
});

mkdirSync(OUTPUT, { recursive: true });
