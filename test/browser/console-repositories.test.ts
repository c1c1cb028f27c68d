import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import {
  axeViolations,
  closeBrowser,
  curlsShown,
  expectFitsAfterResize,
  openConsolePage,
  signInAt,
} from '../support/console-page.js';
import { eventually } from '../support/service-process.js';

/**
 * Connecting a repository host and deploying from it, through the console only (the API is
 * read afterwards to check what the clicks did): a `local` integration over a directory of real
 * git repositories, its connection tested, a deployment created from its repository and branch
 * and built by the real api, builder and deployer, a new commit deployed with "Deploy latest
 * commit" (its trigger and commit message shown), build_on_push turned off in the edit form, and
 * an older commit deployed by its sha. Then the push hook the console showed at connecting is
 * installed in the repository: with build_on_push on, a commit builds (trigger `push`); a
 * rollback through the timeline; with it off, a commit's push builds nothing. A member key is
 * shown the API's refusal; the new forms pass axe in both themes. One stand for the file: every
 * build is a real one.
 */
let stand: CodeDeployStand;
/** The deployment the first test made (the dark-mode check opens its page). */
let deploymentId = '';
/** The integration's directory (under the stand's SLIPWAY_LOCAL_REPOS_ROOT) and its one repository. */
let root: string;
let repo: string;
/** The repository's first commit. */
let firstSha: string;
/** The integration, and the push hook the console showed when connecting it (the secret in it). */
let integrationId = '';
let pushHook = '';

const APP = nodeApp(
  'shop',
  `require('node:http').createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1');\n`,
  { graphConfig: false },
);

/** A commit in the repository; returns its sha. */
function commit(message: string, files: Record<string, string>): string {
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(repo, file), text);
  const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', message);
  return git('rev-parse', 'HEAD');
}

async function expectAccessible(page: Page) {
  expect(await axeViolations(page)).toEqual([]);
}

/** Turns build_on_push on or off in the deployment page's edit form and saves it. */
async function setBuildOnPush(page: Page, on: boolean) {
  const edit = page.getByRole('form', { name: 'Edit configuration, resources and secrets' });
  if (!(await edit.isVisible())) await page.getByText('Edit configuration, resources and secrets').click();
  const box = edit.getByLabel('Build on push');
  await (on ? box.check() : box.uncheck());
  await edit.getByRole('button', { name: 'Save and roll out' }).click();
  await page.getByRole('status').filter({ hasText: 'changed in place' }).waitFor();
}

beforeAll(async () => {
  stand = await startCodeDeployStand();
  // The stand's helper makes the repository (branch main, one commit) under the allowed root.
  firstSha = stand.commit('ui/shop', APP);
  root = path.join(stand.api.config.localReposRoot, 'ui');
  repo = path.join(root, 'shop');
}, 120_000);

afterAll(async () => {
  await closeBrowser();
  await stand?.close();
});

describe.runIf(hasChromium || browserRequired)(
  'a repository, from connecting it to deploying its latest commit',
  () => {
    beforeAll(() => {
      expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
    });

    it('connects, tests, creates from a branch, deploys a new commit, then one commit by its sha', async () => {
      // Only to inject axe (WCAG checks of the new forms) does this page bypass the policy.
      const w = await openConsolePage({ permissions: ['clipboard-read', 'clipboard-write'], bypassCSP: true });
      const { page } = w;
      try {
        await signInAt(page, `${stand.apiUrl}/console/#/listeners`, stand.api.adminKey, 'Listeners and integrations');

        // Connect: the webhook secret is shown this once, with the hook that sends pushes (a local integration has no host).
        const connect = page.getByRole('form', { name: 'Connect a repository host' });
        await connect.getByLabel('Provider').selectOption('local');
        await connect.getByLabel('Name').fill('ui-repos');
        await connect.getByLabel('Repositories directory').fill(root);
        await expectAccessible(page);
        await connect.getByRole('button', { name: 'Connect' }).click();
        const shown = page.getByRole('status', { name: 'Webhook of ui-repos' });
        await shown.waitFor();
        expect(await shown.innerText()).toMatch(/no host to send push events[\s\S]*post-commit[\s\S]*shown only now/);
        const integrations = (await stand.http.get('/v1/integrations/repohost')).body.resources as Array<{
          id: string;
          name: string;
          webhook_url: string;
        }>;
        const integration = integrations.find((i) => i.name === 'ui-repos')!;
        expect(integration).toBeDefined();
        expect(await shown.innerText()).toContain(integration.webhook_url);
        await shown.getByRole('button', { name: 'Copy webhook secret' }).click();
        const secret = (await page.evaluate('navigator.clipboard.readText()')) as string;
        expect(secret).toMatch(/\S{16,}/);
        expect(await shown.innerText()).toContain(secret);
        await shown.getByRole('button', { name: 'Copy push hook' }).click();
        pushHook = (await page.evaluate('navigator.clipboard.readText()')) as string;
        expect(pushHook).toMatch(/^#!\/bin\/sh\n/);
        expect(pushHook).toContain(`WEBHOOK_URL='${integration.webhook_url}'`);
        expect(pushHook).toContain(`WEBHOOK_SECRET='${secret}'`);
        expect(await shown.getByLabel('Push hook').innerText()).toContain(`WEBHOOK_SECRET='${secret}'`);
        integrationId = integration.id;
        await expectAccessible(page);

        // Test connection.
        await page.getByRole('button', { name: 'Test connection of ui-repos' }).click();
        await page.getByText('1 repository reachable').waitFor();

        // Create from the repository and its default branch.
        await page.goto(`${stand.apiUrl}/console/#/deployments/new`);
        await page.getByRole('heading', { name: 'Create a deployment', level: 1 }).waitFor();
        await page.getByLabel('Name', { exact: true }).fill('shop');
        await page.getByLabel('Source').selectOption('repohost');
        await page.getByLabel('Integration').selectOption({ label: 'ui-repos (local)' });
        await page.getByLabel('Repository').selectOption({ label: 'ui-repos/shop' });
        await expect.poll(() => page.getByLabel('Branch').inputValue(), { timeout: 10_000 }).toBe('main');
        await page.getByLabel('Build on push').check();
        await expectAccessible(page);
        await page.getByRole('button', { name: 'Create deployment' }).click();
        await page.getByRole('heading', { name: 'shop', level: 1 }).waitFor();

        const deployment = (await stand.http.get('/v2/deployments?limit=100')).body.resources.find(
          (d: { name: string }) => d.name === 'shop',
        );
        expect(deployment.source_config).toMatchObject({
          integration_id: integration.id,
          repo_url: expect.stringMatching(/^file:\/\/.*\/ui\/shop$/),
          build_on_push: true,
        });
        expect(deployment.source_revision_config.repo_ref).toBe('main');
        deploymentId = deployment.id;
        const first = await stand.untilDone(deployment.id, deployment.latest_revision_id);
        expect(first.status, first.status_message).toBe('DEPLOYED');

        // A new commit, then "Deploy latest commit": the new revision builds it.
        const sha = commit('Say hello in the shop', { 'README.md': '# shop\n' });
        const deploySection = page.getByRole('region', { name: 'Deploy from the repository' });
        await deploySection.getByRole('button', { name: 'Deploy latest commit' }).click();
        await page.getByRole('status').filter({ hasText: 'Deploying the newest commit of main' }).waitFor();
        const latestId = await eventually(
          async () => (await stand.http.get(`/v2/deployments/${deployment.id}`)).body.latest_revision_id as string,
          (id) => id !== deployment.latest_revision_id,
        );
        const second = await stand.untilDone(deployment.id, latestId);
        expect(second.status, second.status_message).toBe('DEPLOYED');
        expect(second.source_revision_config.repo_commit_sha).toBe(sha);
        expect(second.trigger).toBe('patch');
        const story = page.locator(`li[data-revision-id="${latestId}"] .revision-story`);
        await expect
          .poll(() => story.innerText().catch(() => ''), { timeout: 30_000 })
          .toContain(`commit ${sha.slice(0, 10)} “Say hello in the shop”`);
        expect(await story.locator('.trigger').innerText()).toMatch(/^Settings changed by key/);

        // build_on_push in the edit form, beside the webhook URL the host must call: changed in place.
        await page.getByText('Edit configuration, resources and secrets').click();
        const edit = page.getByRole('form', { name: 'Edit configuration, resources and secrets' });
        expect(await edit.getByText('Build on push').locator('xpath=..').innerText()).toContain(
          integration.webhook_url,
        );
        await edit.getByLabel('Build on push').uncheck();
        await edit.getByRole('button', { name: 'Save and roll out' }).click();
        await page.getByRole('status').filter({ hasText: 'changed in place' }).waitFor();
        const edited = (await stand.http.get(`/v2/deployments/${deployment.id}`)).body;
        expect(edited.source_config.build_on_push).toBe(false);
        expect(edited.latest_revision_id).toBe(latestId);

        // The branch-or-commit form, checked for accessibility with its branches loaded.
        await deploySection.getByRole('button', { name: 'Deploy a branch or commit' }).click();
        const form = page.getByRole('form', { name: 'Deploy a branch or commit' });
        await expect
          .poll(() => form.getByLabel('Branch').locator('option').allInnerTexts(), { timeout: 30_000 })
          .toEqual([`main (${sha.slice(0, 10)}), default`]);
        await expectAccessible(page);

        // One commit of the branch: the revision names it (and the build checks it out).
        await form.getByLabel('Commit (optional)').fill(firstSha);
        await form.getByRole('button', { name: 'Deploy' }).click();
        await page
          .getByRole('status')
          .filter({ hasText: `Deploying commit ${firstSha.slice(0, 10)} of main` })
          .waitFor();
        const pinnedId = (await stand.http.get(`/v2/deployments/${deployment.id}`)).body.latest_revision_id as string;
        expect(pinnedId).not.toBe(latestId);
        const pinned = await stand.untilDone(deployment.id, pinnedId);
        expect(pinned.status, pinned.status_message).toBe('DEPLOYED');
        expect(pinned.source_revision_config).toMatchObject({ repo_ref: 'main', repo_commit_sha: firstSha });
        expect(w.errors).toEqual([]);
      } finally {
        await w.close();
      }
    }, 400_000);

    it('builds a commit once build_on_push is on in the edit form, rolls back, and builds none once it is off', async () => {
      expect(pushHook).not.toBe('');
      // The hook the console showed when connecting, installed as its words say.
      writeFileSync(path.join(repo, '.git', 'hooks', 'post-commit'), pushHook, { mode: 0o755 });
      const w = await openConsolePage();
      const { page } = w;
      const deployment = async () => (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
      const newestDelivery = async () =>
        (await stand.http.get(`/v1/integrations/repohost/${integrationId}/deliveries`)).body.resources[0];
      try {
        await signInAt(page, `${stand.apiUrl}/console/#/deployments/${deploymentId}`, stand.api.adminKey, 'shop');
        const before = await deployment();
        expect(before.source_config.build_on_push).toBe(false);

        // On, in the edit form: changed in place (no new revision).
        await setBuildOnPush(page, true);
        await eventually(deployment, (d) => d.source_config.build_on_push === true);
        expect((await deployment()).latest_revision_id).toBe(before.latest_revision_id);

        // A commit: the hook sends the push, and the push builds it.
        const sha = commit('Ship it on push', { 'CHANGELOG.md': 'shipped on push\n' });
        const pushedId = (await eventually(deployment, (d) => d.latest_revision_id !== before.latest_revision_id))
          .latest_revision_id as string;
        expect(await newestDelivery()).toMatchObject({
          event: 'push',
          ref: 'refs/heads/main',
          signature_valid: true,
          status_code: 200,
          revision_ids: [pushedId],
        });
        const pushed = await stand.untilDone(deploymentId, pushedId);
        expect(pushed.status, pushed.status_message).toBe('DEPLOYED');
        expect(pushed.trigger).toBe('push');
        expect(pushed.source_revision_config).toMatchObject({ repo_ref: 'main', repo_commit_sha: sha });
        // The page follows by itself: why the revision exists, and its commit.
        const story = page.locator(`li[data-revision-id="${pushedId}"] .revision-story`);
        await expect
          .poll(() => story.innerText().catch(() => ''), { timeout: 30_000 })
          .toMatch(new RegExp(`^Pushed to the tracked branch[\\s\\S]*commit ${sha.slice(0, 10)} “Ship it on push”`));

        // Roll back to the revision before the push, through the timeline and its dialog.
        const target = before.latest_revision_id as string;
        await page.getByRole('button', { name: `Roll back to revision ${target.slice(0, 8)}` }).click();
        const dialog = page.getByRole('dialog', { name: `Roll back to revision ${target.slice(0, 8)}` });
        await dialog.getByRole('button', { name: 'Roll back' }).click();
        await dialog.waitFor({ state: 'hidden' });
        const rollbackId = (await eventually(deployment, (d) => d.latest_revision_id !== pushedId))
          .latest_revision_id as string;
        const rolledBack = await stand.untilDone(deploymentId, rollbackId);
        expect(rolledBack.status, rolledBack.status_message).toBe('DEPLOYED');
        expect(rolledBack).toMatchObject({ trigger: 'redeploy', redeployed_from: target });
        expect(rolledBack.source_revision_config.repo_commit_sha).toBe(firstSha);
        expect((await eventually(deployment, (d) => d.active_revision_id === rollbackId)).active_revision_id).toBe(
          rollbackId,
        );
        await expect
          .poll(() =>
            page
              .locator(`li[data-revision-id="${rollbackId}"] .revision-story .trigger`)
              .innerText()
              .catch(() => ''),
          )
          .toMatch(/^Rolled back/);

        // Off again: the hook still sends the next commit's push, and nothing builds.
        await setBuildOnPush(page, false);
        await eventually(deployment, (d) => d.source_config.build_on_push === false);
        const unbuilt = commit('Not built: build on push is off', { 'CHANGELOG.md': 'not built\n' });
        const ignored = await eventually(newestDelivery, (d) => d.outcome.includes(unbuilt.slice(0, 12)));
        expect(ignored).toMatchObject({ status_code: 200, revision_ids: [] });
        expect(ignored.outcome).toContain("no deployment builds this repository's main on push");
        expect((await deployment()).latest_revision_id).toBe(rollbackId);
        expect(w.errors).toEqual([]);
      } finally {
        await w.close();
      }
    }, 400_000);

    it("shows a member key the API's 403 words, and never the token in the call shown as curl", async () => {
      const member = await stand.api.mintKey({ role: 'member' });
      const w = await openConsolePage();
      try {
        await signInAt(w.page, `${stand.apiUrl}/console/#/listeners`, member, 'Listeners and integrations');
        const connect = w.page.getByRole('form', { name: 'Connect a repository host' });
        await connect.getByLabel('Provider').selectOption('gitea');
        await connect.getByLabel('Name').fill('by-member');
        await connect.getByLabel('API URL').fill('https://gitea.example.com');
        await connect.getByLabel('Token').fill('gta_do-not-show-me');
        await connect.getByRole('button', { name: 'Connect' }).click();
        await connect.getByRole('alert').filter({ hasText: 'This operation requires an admin API key.' }).waitFor();
        const [curl] = await curlsShown(w.page, connect);
        expect(curl).toContain('"token":"<your token>"');
        expect(curl).not.toContain('gta_do-not-show-me');
        expect(
          (await stand.http.get('/v1/integrations/repohost')).body.resources.map((i: { name: string }) => i.name),
        ).not.toContain('by-member');
      } finally {
        await w.close();
      }
    }, 60_000);

    it('keeps the new forms clean for axe-core in dark mode, and fits them in 375 px', async () => {
      expect(deploymentId).not.toBe('');
      const dark = await openConsolePage({
        colorScheme: 'dark',
        bypassCSP: true,
        viewport: { width: 375, height: 800 },
      });
      try {
        await signInAt(
          dark.page,
          `${stand.apiUrl}/console/#/listeners`,
          stand.api.adminKey,
          'Listeners and integrations',
        );
        await dark.page
          .getByRole('form', { name: 'Connect a repository host' })
          .getByLabel('Provider')
          .selectOption('github');
        await dark.page.getByLabel('Authenticate with').selectOption('app');
        await dark.page.getByLabel('Private key (PEM)').waitFor();
        await expectAccessible(dark.page);
        await expectFitsAfterResize(dark.page, 375);
        await dark.page.goto(`${stand.apiUrl}/console/#/deployments/${deploymentId}`);
        await dark.page.getByRole('button', { name: 'Deploy a branch or commit' }).click();
        await dark.page
          .getByRole('form', { name: 'Deploy a branch or commit' })
          .getByLabel('Commit (optional)')
          .waitFor();
        await expectAccessible(dark.page);
        await expectFitsAfterResize(dark.page, 375);
        expect(dark.errors).toEqual([]);
      } finally {
        await dark.close();
      }
    }, 60_000);
  },
);
