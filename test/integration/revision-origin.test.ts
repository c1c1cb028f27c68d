import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repohostFixture, type RepohostFixture } from '../support/git-fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Every revision says why it exists and who made it (docs/api.md, Revisions): `trigger` for each
 * door a revision comes through, `created_by` the API key (its id and description) that called,
 * or Slipway with what set it off (a pull request's delivery). Pushes are checked in the push
 * webhook's own tests; a build's commit message and author in the agent server's e2e.
 */

let api: TestApi;
let repo: RepohostFixture;
let key: string;
let keyId: string;

beforeAll(async () => {
  api = await startTestApi();
  repo = await repohostFixture(api);
  const minted = await api.http.post('/v2/api-keys', { description: 'release pipeline' });
  expect(minted.status, minted.text).toBe(201);
  key = minted.body.key;
  keyId = minted.body.id;
}, 60_000);

afterAll(async () => {
  await api?.close();
});

const as = () => api.http.as(key);
const revision = async (deploymentId: string, revisionId: string) =>
  (await as().get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;

describe('trigger and created_by', () => {
  it('names the create, a PATCH, POST …/revisions and a redeploy, each made by the calling key', async () => {
    const created = await as().post('/v2/deployments', {
      name: `origin-${randomUUID().slice(0, 6)}`,
      source: 'repohost',
      source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl, previews: { enabled: true } },
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    const byKey = { kind: 'api_key', id: keyId, name: 'release pipeline' };
    const first = created.body.latest_revision_id;
    expect(await revision(id, first)).toMatchObject({ trigger: 'create', created_by: byKey });

    const patched = await as().patch(`/v2/deployments/${id}`, { secrets: [{ name: 'A', value: '1' }] });
    expect(patched.status, patched.text).toBe(200);
    expect(await revision(id, patched.body.latest_revision_id)).toMatchObject({ trigger: 'patch', created_by: byKey });

    const posted = await as().post(`/v2/deployments/${id}/revisions`, {});
    expect(posted.status, posted.text).toBe(201);
    const latest = (await as().get(`/v2/deployments/${id}`)).body.latest_revision_id;
    expect(await revision(id, latest)).toMatchObject({ trigger: 'api_revision', created_by: byKey });

    // A built first revision (its artifact recorded as a build would), rolled back to by the admin's key.
    await api.dataSource.query(`UPDATE revisions SET artifact_ref = 'artifact-1' WHERE id = $1`, [first]);
    const redeployed = await api.http.post(`/v2/deployments/${id}/revisions/${first}/redeploy`, {});
    expect(redeployed.status, redeployed.text).toBeLessThan(300);
    const rolledBack = (await as().get(`/v2/deployments/${id}`)).body.latest_revision_id;
    expect(await revision(id, rolledBack)).toMatchObject({
      trigger: 'redeploy',
      redeployed_from: first,
      created_by: { kind: 'api_key', name: expect.any(String) },
    });
    expect((await revision(id, rolledBack)).created_by.id).not.toBe(keyId);
  });

  it("names a preview's revisions 'preview': made by the caller through the API, by Slipway for a pull request's delivery", async () => {
    const parent = await as().post('/v2/deployments', {
      name: `origin-pr-${randomUUID().slice(0, 6)}`,
      source: 'repohost',
      source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl, previews: { enabled: true } },
      source_revision_config: {},
    });
    const opened = await as().post(`/v2/deployments/${parent.body.id}/previews`, { ref: 'feature/x', number: 3 });
    expect(opened.status, opened.text).toBe(201);
    expect(await revision(opened.body.id, opened.body.latest_revision_id)).toMatchObject({
      trigger: 'preview',
      created_by: { kind: 'api_key', id: keyId },
    });

    const raw = JSON.stringify({
      action: 'synchronize',
      number: 3,
      pull_request: {
        number: 3,
        head: { ref: 'feature/x', sha: 'a'.repeat(40), repo: { full_name: 'hooks/agent', clone_url: repo.repoUrl } },
        base: { repo: { full_name: 'hooks/agent', clone_url: repo.repoUrl } },
      },
      repository: { full_name: 'hooks/agent', clone_url: repo.repoUrl },
    });
    const headers = {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', repo.webhookSecret).update(raw).digest('hex')}`,
    };
    const delivered = await api.http.request('POST', `/v1/integrations/repohost/${repo.integrationId}/webhook`, {
      rawBody: raw,
      key: null,
      headers,
    });
    expect(delivered.status, delivered.text).toBe(200);
    const rolled = (await as().get(`/v2/deployments/${opened.body.id}`)).body.latest_revision_id;
    expect(rolled).not.toBe(opened.body.latest_revision_id);
    expect(await revision(opened.body.id, rolled)).toMatchObject({
      trigger: 'preview',
      created_by: { kind: 'system', id: repo.integrationId, name: 'pull request #3' },
    });
  });
});
