import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repohostFixture, type RepohostFixture } from '../support/git-fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Each revision's secrets with a keyed fingerprint of their values (docs/api.md, Revisions):
 * equal across revisions while a value stays, different once it changes, null for revisions made
 * before fingerprints were kept, and neither a value nor any plain hash of one in a response.
 */

let api: TestApi;
let repo: RepohostFixture;

beforeAll(async () => {
  api = await startTestApi();
  repo = await repohostFixture(api);
}, 60_000);

afterAll(async () => {
  await api?.close();
});

const revision = async (deploymentId: string, revisionId: string) => {
  const res = await api.http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`);
  expect(res.status, res.text).toBe(200);
  return res;
};
const fingerprintsOf = async (deploymentId: string, revisionId: string) =>
  Object.fromEntries(
    (
      (await revision(deploymentId, revisionId)).body.secret_fingerprints as Array<{
        name: string;
        fingerprint: string;
      }>
    ).map((s) => [s.name, s.fingerprint]),
  );

/** Every plain digest of `value` a response might leak, as hex and base64 (url) text. */
const plainHashes = (value: string) =>
  ['md5', 'sha1', 'sha256', 'sha512'].flatMap((algorithm) => {
    const digest = createHash(algorithm).update(value).digest();
    return [digest.toString('hex'), digest.toString('base64'), digest.toString('base64url')].flatMap((t) => [
      t,
      t.slice(0, 16),
    ]);
  });

describe('secret fingerprints on revisions', () => {
  it('keeps a fingerprint while a value stays, changes it with the value, and shows no value nor plain hash', async () => {
    const same = `same-${randomUUID()}`;
    const before = `before-${randomUUID()}`;
    const after = `after-${randomUUID()}`;
    const created = await api.http.post('/v2/deployments', {
      name: `fp-${randomUUID().slice(0, 6)}`,
      source: 'repohost',
      source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl },
      source_revision_config: {},
      secrets: [
        { name: 'STEADY', value: same },
        { name: 'GREETING', value: before },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    const first = created.body.latest_revision_id;

    const patched = await api.http.patch(`/v2/deployments/${id}`, {
      secrets: [
        { name: 'STEADY', value: same },
        { name: 'GREETING', value: after },
      ],
    });
    expect(patched.status, patched.text).toBe(200);
    const second = patched.body.latest_revision_id;
    expect(second).not.toBe(first);

    const one = await fingerprintsOf(id, first);
    const two = await fingerprintsOf(id, second);
    expect(Object.keys(one).sort()).toEqual(['GREETING', 'STEADY']);
    for (const f of [...Object.values(one), ...Object.values(two)]) expect(f).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(two.STEADY).toBe(one.STEADY);
    expect(two.GREETING).not.toBe(one.GREETING);
    // The existing field is as it was: names only.
    expect((await revision(id, second)).body.secrets).toEqual([{ name: 'STEADY' }, { name: 'GREETING' }]);

    // A rollback to the first revision brings its values back, and so its fingerprints.
    await api.dataSource.query(`UPDATE revisions SET artifact_ref = 'artifact-1' WHERE id = $1`, [first]);
    const redeployed = await api.http.post(`/v2/deployments/${id}/revisions/${first}/redeploy`, {});
    expect(redeployed.status, redeployed.text).toBe(200);
    expect(await fingerprintsOf(id, redeployed.body.latest_revision_id)).toEqual(one);

    // No value, nor any plain hash of one, in a revision or in the list.
    const list = await api.http.get(`/v2/deployments/${id}/revisions`);
    expect(list.status, list.text).toBe(200);
    const texts = [list.text, ...(await Promise.all([first, second].map(async (r) => (await revision(id, r)).text)))];
    for (const text of texts) {
      for (const value of [same, before, after]) {
        expect(text).not.toContain(value);
        for (const hash of plainHashes(value)) expect(text).not.toContain(hash);
      }
    }
  });

  it('says null (unknown) for a revision made before fingerprints were kept', async () => {
    const created = await api.http.post('/v2/deployments', {
      name: `fp-old-${randomUUID().slice(0, 6)}`,
      source: 'repohost',
      source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl },
      source_revision_config: {},
      secrets: [{ name: 'GREETING', value: 'a' }],
    });
    expect(created.status, created.text).toBe(201);
    const { id, latest_revision_id: rev } = created.body;
    // As the migration leaves a revision made before it.
    await api.dataSource.query(`UPDATE revisions SET secret_fingerprints = NULL WHERE id = $1`, [rev]);
    const res = await revision(id, rev);
    expect(res.body.secret_fingerprints).toBeNull();
    expect(res.body.secrets).toEqual([{ name: 'GREETING' }]);
  });
});
