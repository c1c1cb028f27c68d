import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, CHROMIUM, hasChromium } from '../support/browser.js';
import { agentApplies, openConsolePage, signInAt } from '../support/console-page.js';
import { createImageDeployment } from '../support/fixtures.js';
import { listenerStandForFile } from '../support/listener-stand.js';

/**
 * The rollback dialog names the secrets whose value a rollback changes (docs/api.md, Revisions:
 * each revision's keyed fingerprints are compared, never values), and says "unknown" for a
 * revision made before fingerprints were kept. An `external_container` deployment whose rollouts
 * the test reports as the listener agent would (nothing to build).
 */

const stand = listenerStandForFile('rollback-secrets');

describe.runIf(hasChromium || browserRequired)('the rollback dialog and secret values', () => {
  beforeAll(() => {
    expect(hasChromium, `Chromium must be installed at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
  });

  it('names a secret whose value changed, not one that kept its value, and says unknown for older revisions', async () => {
    const first = `first-${randomUUID()}`;
    const second = `second-${randomUUID()}`;
    const steady = `steady-${randomUUID()}`;
    const name = `rollback-secrets-${randomUUID().slice(0, 6)}`;
    const d = await createImageDeployment(stand.api, name, stand.listenerId, {
      secrets: [
        { name: 'GREETING', value: first },
        { name: 'STEADY', value: steady },
      ],
    });
    await agentApplies(stand.agent, stand.listenerId, d.latest_revision_id);
    const patched = await stand.api.http.patch(`/v2/deployments/${d.id}`, {
      secrets: [
        { name: 'GREETING', value: second },
        { name: 'STEADY', value: steady },
      ],
    });
    expect(patched.status, patched.text).toBe(200);
    await agentApplies(stand.agent, stand.listenerId, patched.body.latest_revision_id);

    const w = await openConsolePage();
    try {
      await signInAt(w.page, `${stand.api.baseUrl}/console/#/deployments/${d.id}`, stand.api.adminKey, name);
      const short = d.latest_revision_id.slice(0, 8);
      const openDialog = async () => {
        await w.page.getByRole('button', { name: `Roll back to revision ${short}` }).click();
        const dialog = w.page.getByRole('dialog', { name: `Roll back to revision ${short}` });
        await dialog.getByRole('table', { name: 'What changes' }).waitFor();
        return dialog;
      };
      const rowText = (dialog: Awaited<ReturnType<typeof openDialog>>, field: string) =>
        dialog.getByRole('row', { name: new RegExp(`^${field}`) }).innerText();

      let dialog = await openDialog();
      const changed = await rowText(dialog, 'Secrets changed');
      expect(changed).toContain('GREETING');
      expect(changed).not.toContain('STEADY');
      expect(await dialog.getByRole('row', { name: /^Secret values unknown/ }).count()).toBe(0);
      const shown = await dialog.innerText();
      for (const value of [first, second, steady]) expect(shown).not.toContain(value);
      await dialog.getByRole('button', { name: 'Cancel' }).click();

      // The first revision as one made before fingerprints were kept: no guess, "unknown".
      await stand.api.dataSource.query(`UPDATE revisions SET secret_fingerprints = NULL WHERE id = $1`, [
        d.latest_revision_id,
      ]);
      await w.page.reload();
      await w.page.getByRole('heading', { name, level: 1 }).waitFor();
      dialog = await openDialog();
      expect(await dialog.getByRole('row', { name: /^Secrets changed/ }).count()).toBe(0);
      const unknown = await rowText(dialog, 'Secret values unknown');
      expect(unknown).toContain('GREETING, STEADY');
      expect(unknown).toContain('unknown');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 90_000);
});
