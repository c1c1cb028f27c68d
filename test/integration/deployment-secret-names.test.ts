import { randomUUID } from 'node:crypto';
import { SecretBox } from '@slipway/crypto';
import { fillSecretNames } from '@slipway/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A deployment's secret names are stored beside its sealed secrets (migration 1764800000100), so
 * GET and list show them without opening a box; rows from before the column are filled by
 * `slipway migrate` (fillSecretNames) and meanwhile shown by opening theirs.
 */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = (
    await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'names',
      compute_config: { k8s_namespaces: null },
    })
  ).body.id;
});
afterAll(async () => {
  await api?.close();
});

async function create(secrets: Array<{ name: string; value: string }>) {
  const res = await api.http.post('/v2/deployments', {
    name: `names-${randomUUID().slice(0, 8)}`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/a:1' },
    secrets,
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; name: string };
}

const storedNames = async (id: string) =>
  (await api.dataSource.query(`SELECT secret_names FROM deployments WHERE id = $1`, [id]))[0].secret_names;
const shownNames = async (id: string) =>
  ((await api.http.get(`/v2/deployments/${id}`)).body.secrets as Array<{ name: string }>).map((s) => s.name);

describe('secret names beside the sealed secrets', () => {
  it('create and PATCH record the names; GET and list show them without opening the box', async () => {
    const d = await create([
      { name: 'B_KEY', value: 'b' },
      { name: 'A_KEY', value: 'a' },
    ]);
    expect(await storedNames(d.id)).toEqual(['B_KEY', 'A_KEY']);
    const patched = await api.http.patch(`/v2/deployments/${d.id}`, { secrets: [{ name: 'C_KEY', value: 'c' }] });
    expect(patched.status, patched.text).toBe(200);
    const names = await storedNames(d.id);
    expect(names).toContain('C_KEY');
    // A box that cannot be opened: had a read opened it, it would fail.
    await api.dataSource.query(`UPDATE deployments SET secrets_sealed = 'not-a-box' WHERE id = $1`, [d.id]);
    expect(await shownNames(d.id)).toEqual(names);
    const list = await api.http.get(`/v2/deployments?name=${d.name}`);
    expect(list.status, list.text).toBe(200);
    expect(list.body.resources[0].secrets.map((s: { name: string }) => s.name)).toEqual(names);
  });

  it('rows from before the column are shown by opening their box, and filled by the migrate step', async () => {
    const d = await create([{ name: 'OLD_KEY', value: 'o' }]);
    const none = await create([]);
    await api.dataSource.query(`UPDATE deployments SET secret_names = NULL WHERE id = ANY($1)`, [[d.id, none.id]]);
    expect(await shownNames(d.id)).toEqual(['OLD_KEY']);
    const box = new SecretBox(api.config.secretsKey.key);
    const filled = await fillSecretNames(api.dataSource, (sealed, id) =>
      (JSON.parse(box.open(sealed, id)) as Array<{ name: string }>).map((s) => s.name),
    );
    expect(filled).toBe(1); // the one with secrets: one without has no box to open
    expect(await storedNames(d.id)).toEqual(['OLD_KEY']);
    expect(await fillSecretNames(api.dataSource, () => [])).toBe(0);
  });
});

describe('names npm sets for the scripts it runs', () => {
  const npmSet = ['COLOR', 'NODE', 'INIT_CWD', 'npm_config_cache', 'npm_package_name'];
  const refusals = (detail: Array<{ loc: unknown[]; msg: string; type: string }>) =>
    detail.map((d) => [d.loc, d.type, d.msg.replace(/ \(reserved: .*\)$/, '')]);
  const why =
    "npm sets it for the scripts it runs (`npm run start`, build steps), so the app would see npm's value, not this one";

  it('are refused on create: 422 naming each with the reason, nothing written', async () => {
    const name = `npm-names-${randomUUID().slice(0, 8)}`;
    const res = await api.http.post('/v2/deployments', {
      name,
      source: 'external_container',
      source_config: { listener_id: listenerId },
      source_revision_config: { image_uri: 'registry.example/a:1' },
      secrets: [{ name: 'NPM_TOKEN', value: 'kept' }, ...npmSet.map((n) => ({ name: n, value: 'x' }))],
    });
    expect(res.status, res.text).toBe(422);
    expect(refusals(res.body.detail)).toEqual(
      npmSet.map((n, i) => [
        ['body', 'secrets', i + 1, 'name'],
        'value_error',
        `Value error, '${n}' is a reserved name: ${why}`,
      ]),
    );
    expect(res.body.detail[0].msg).toMatch(/\(reserved: .*COLOR, NODE, INIT_CWD, .*npm_\*\)$/);
    expect(
      (await api.dataSource.query(`SELECT count(*)::int AS n FROM deployments WHERE name = $1`, [name]))[0].n,
    ).toBe(0);
  });

  it('are refused on PATCH with the same reason, the stored secrets untouched', async () => {
    const d = await create([{ name: 'NPM_TOKEN', value: 'kept' }]);
    const res = await api.http.patch(`/v2/deployments/${d.id}`, {
      secrets: [
        { name: 'NPM_TOKEN', value: '********' },
        { name: 'COLOR', value: 'blue' },
      ],
    });
    expect(res.status, res.text).toBe(422);
    expect(refusals(res.body.detail)).toEqual([
      [['body', 'secrets', 1, 'name'], 'value_error', `Value error, 'COLOR' is a reserved name: ${why}`],
    ]);
    expect(await storedNames(d.id)).toEqual(['NPM_TOKEN']);
  });
});
