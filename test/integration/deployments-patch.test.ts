import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { createRepohostDeployment } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** PATCH /v2/deployments/{id} (docs/api.md, Deployments): when it makes a revision, immutables, secrets. */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'patch-cluster',
    compute_config: { k8s_namespaces: ['agents'] },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

const MASK = '********';

async function createImage(name: string, extra: Record<string, unknown> = {}) {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: {
      listener_id: listenerId,
      listener_config: { k8s_namespace: 'agents' },
      resource_spec: { cpu: 0.5, max_scale: 3 },
    },
    source_revision_config: { image_uri: 'registry.example/agent:1.0.0' },
    secrets: [
      { name: 'OPENAI_API_KEY', value: 'sk-patch-first-value' },
      { name: 'DB_PASSWORD', value: 'hunter2-patch-value' },
    ],
    ...extra,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const createRepohost = (name: string) => createRepohostDeployment(api, name);

async function revisionCount(deploymentId: string): Promise<number> {
  const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1`, [
    deploymentId,
  ]);
  return row.n;
}

const patch = (id: string, body: unknown) => api.http.patch(`/v2/deployments/${id}`, body);

/** The stored secrets of a deployment (or revision): opening the sealed column as the product does. */
async function storedSecrets(
  table: 'deployments' | 'revisions',
  id: string,
): Promise<Array<{ name: string; value: string }>> {
  const [row] = await api.dataSource.query(`SELECT secrets_sealed FROM ${table} WHERE id = $1`, [id]);
  if (!row.secrets_sealed) return [];
  return JSON.parse(secretsCodec(api.config).open(row.secrets_sealed, id));
}

describe('which PATCHes make a new revision', () => {
  it.each([
    ['secrets', { secrets: [{ name: 'NEW_ONE', value: 'v' }] }],
    [
      'a source_revision_config field (image_uri)',
      { source_revision_config: { image_uri: 'registry.example/agent:2.0.0' } },
    ],
    [
      'a source_revision_config field among nulls',
      { source_revision_config: { repo_ref: null, graph_config_path: 'graph.json' } },
    ],
    ['resource_spec', { source_config: { resource_spec: { cpu: 2 } } }],
    ["tracing (the instances' tracing variables)", { source_config: { tracing: false } }],
    ['an empty secrets list (removes them all)', { secrets: [] }],
  ])('%s → a new revision, queued behind the one in flight', async (_what, body) => {
    const d = await createImage(`rev-yes-${randomUUID().slice(0, 8)}`);
    const res = await patch(d.id, body);
    expect(res.status, res.text).toBe(200);
    expect(res.body.latest_revision_id).not.toBe(d.latest_revision_id);
    expect(await revisionCount(d.id)).toBe(2);
    expect(res.body.source_config.tracing).toBe(
      (body as { source_config?: { tracing?: boolean } }).source_config?.tracing ?? null,
    );
    const revision = await api.http.get(`/v2/deployments/${d.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.body).toMatchObject({
      status: 'QUEUED',
      status_message: `Waiting for revision ${d.latest_revision_id} to finish.`,
    });
    // The one in flight is untouched.
    expect((await api.http.get(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`)).body.status).toBe(
      'CREATING',
    );
  });

  it.each([
    ['build_on_push', { source_config: { build_on_push: true } }, { source_config: { build_on_push: true } }],
    [
      'custom_url',
      { source_config: { custom_url: 'https://agent.example.com' } },
      { url: 'https://agent.example.com', source_config: { custom_url: 'https://agent.example.com' } },
    ],
    [
      'install_command',
      { source_config: { install_command: 'pip install -e .' } },
      { source_config: { install_command: 'pip install -e .' } },
    ],
    ['build_command', { source_config: { build_command: 'make' } }, { source_config: { build_command: 'make' } }],
    ['image_version', { image_version: '3.1.4' }, { image_version: '3.1.4' }],
    [
      'an all-null source_revision_config',
      { source_revision_config: { image_uri: null, repo_ref: null, graph_config_path: null } },
      {},
    ],
    ['null secrets and resource_spec', { secrets: null, source_config: { resource_spec: null } }, {}],
    ['an empty body', {}, {}],
  ])('%s → changed without a new revision', async (_what, body, expected) => {
    const d = await createImage(`rev-no-${randomUUID().slice(0, 8)}`);
    const res = await patch(d.id, body);
    expect(res.status, res.text).toBe(200);
    expect(res.body.latest_revision_id).toBe(d.latest_revision_id);
    expect(res.body).toMatchObject(expected);
    expect(await revisionCount(d.id)).toBe(1);
    // The change is stored, not just echoed.
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body).toMatchObject(expected);
  });

  it('a later PATCH keeps earlier source_config changes', async () => {
    const d = await createImage('keeps-config');
    await patch(d.id, { source_config: { custom_url: 'https://a.example.com', build_command: 'make' } });
    const res = await patch(d.id, { source_config: { build_on_push: false } });
    expect(res.body.source_config).toMatchObject({
      custom_url: 'https://a.example.com',
      build_command: 'make',
      build_on_push: false,
    });
  });

  it('the new revision snapshots the merged config: changed fields new, the rest from the latest revision', async () => {
    const d = await createRepohost('snapshot-merge');
    const res = await patch(d.id, { source_revision_config: { langgraph_config_path: 'agents/graph.json' } });
    expect(res.status).toBe(200);
    const revision = await api.http.get(`/v2/deployments/${d.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.body.source_revision_config).toEqual({
      repo_ref: 'main',
      graph_config_path: 'agents/graph.json',
      image_uri: null,
      repo_commit_sha: null,
      repo_commit_message: null,
      repo_commit_author: null,
      source_tarball_path: null,
    });
    expect(res.body.source_revision_config.graph_config_path).toBe('agents/graph.json');
  });
});

describe('resource_spec on PATCH', () => {
  it('replaces the whole spec (fields not given fall back to the defaults, not to the old spec)', async () => {
    const d = await createImage('spec-replace');
    expect(d.source_config.resource_spec).toMatchObject({ cpu: 0.5, cpu_limit: 1, max_scale: 3, memory_mb: 1024 });
    const res = await patch(d.id, { source_config: { resource_spec: { memory_mb: 2048 } } });
    expect(res.status).toBe(200);
    expect(res.body.source_config.resource_spec).toMatchObject({
      cpu: 1,
      cpu_limit: 2,
      max_scale: 1,
      memory_mb: 2048,
      memory_limit_mb: 4096,
    });
    const [revision] = await api.dataSource.query(`SELECT resource_spec FROM revisions WHERE id = $1`, [
      res.body.latest_revision_id,
    ]);
    expect(revision.resource_spec).toEqual(res.body.source_config.resource_spec);
  });

  it('is validated like on create (422 at the field) and nothing changes', async () => {
    const d = await createImage('spec-invalid');
    const res = await patch(d.id, { source_config: { resource_spec: { min_scale: 5, max_scale: 2 } } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'resource_spec', 'min_scale'],
          msg: 'Value error, min_scale must not exceed max_scale',
          type: 'value_error',
        },
      ],
    });
    expect(await revisionCount(d.id)).toBe(1);
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body.source_config.resource_spec).toEqual(
      d.source_config.resource_spec,
    );
  });
});

describe('immutable fields', () => {
  it.each([
    ['name', { name: 'another-name' }, 'name'],
    ['source', { source: 'repohost' }, 'source'],
    ['source (alias of another kind)', { source: 'github' }, 'source'],
    ['integration_id', { source_config: { integration_id: randomUUID() } }, 'source_config.integration_id'],
    ['repo_url', { source_config: { repo_url: 'https://git.example/other' } }, 'source_config.repo_url'],
    ['listener_id', { source_config: { listener_id: randomUUID() } }, 'source_config.listener_id'],
    [
      'listener_config',
      { source_config: { listener_config: { k8s_namespace: 'other' } } },
      'source_config.listener_config',
    ],
    ['deployment_type', { deployment_type: 'prod' }, 'deployment_type'],
    ['deployment_type in source_config', { source_config: { deployment_type: 'dev' } }, 'deployment_type'],
  ])('changing %s → 400 naming it, nothing written', async (_what, body, field) => {
    const d = await createImage(`immut-${randomUUID().slice(0, 8)}`);
    const res = await patch(d.id, { ...body, secrets: [{ name: 'X', value: 'y' }] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: `${field} cannot be changed after the deployment is created.` });
    expect(await revisionCount(d.id)).toBe(1);
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body.secrets.map((s: any) => s.name)).toEqual([
      'OPENAI_API_KEY',
      'DB_PASSWORD',
    ]);
  });

  it('repeating the stored values (aliases included) is fine', async () => {
    const d = await createImage('immut-same');
    const res = await patch(d.id, {
      name: 'immut-same',
      source: 'external_docker',
      deployment_type: null,
      source_config: {
        listener_id: listenerId,
        listener_config: { k8s_namespace: 'agents' },
        integration_id: null,
        repo_url: null,
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.latest_revision_id).toBe(d.latest_revision_id);

    const r = await createRepohost('immut-same-repo');
    const ok = await patch(r.id, {
      name: 'immut-same-repo',
      source: 'github',
      deployment_type: 'dev',
      source_config: {
        integration_id: r.source_config.integration_id,
        repo_url: r.source_config.repo_url,
        deployment_type: 'dev',
      },
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it('image_uri on a repohost deployment → 422 as on create, no revision', async () => {
    const r = await createRepohost('patch-cross-image');
    const res = await patch(r.id, { source_revision_config: { image_uri: 'registry.example/other:1' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_revision_config', 'image_uri'],
          msg: 'Value error, image_uri is only for external_container and internal_docker deployments',
          type: 'value_error',
        },
      ],
    });
    expect(await revisionCount(r.id)).toBe(1);
  });

  it('a changed repohost deployment_type is refused', async () => {
    const r = await createRepohost('immut-type-repo');
    const res = await patch(r.id, { deployment_type: 'prod' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'deployment_type cannot be changed after the deployment is created.' });
  });
});

describe('secrets on PATCH', () => {
  it('GET → send back masked values plus one new secret → the stored values are kept', async () => {
    const d = await createImage('secrets-roundtrip');
    const got = await api.http.get(`/v2/deployments/${d.id}`);
    expect(got.body.secrets).toEqual([
      { name: 'OPENAI_API_KEY', value: MASK },
      { name: 'DB_PASSWORD', value: MASK },
    ]);
    const res = await patch(d.id, {
      secrets: [...got.body.secrets, { name: 'NEW_TOKEN', value: 'brand-new-token-value' }],
    });
    expect(res.status).toBe(200);
    expect(res.body.secrets).toEqual([
      { name: 'OPENAI_API_KEY', value: MASK },
      { name: 'DB_PASSWORD', value: MASK },
      { name: 'NEW_TOKEN', value: MASK },
    ]);
    const expected = [
      { name: 'OPENAI_API_KEY', value: 'sk-patch-first-value' },
      { name: 'DB_PASSWORD', value: 'hunter2-patch-value' },
      { name: 'NEW_TOKEN', value: 'brand-new-token-value' },
    ];
    expect(await storedSecrets('deployments', d.id)).toEqual(expected);
    // The new revision got the same (merged) set, sealed for itself.
    expect(await storedSecrets('revisions', res.body.latest_revision_id)).toEqual(expected);
    const revision = await api.http.get(`/v2/deployments/${d.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.body.secrets).toEqual([{ name: 'OPENAI_API_KEY' }, { name: 'DB_PASSWORD' }, { name: 'NEW_TOKEN' }]);
  });

  it('the list replaces the set: a secret left out is removed, a new value replaces the old', async () => {
    const d = await createImage('secrets-replace');
    const res = await patch(d.id, { secrets: [{ name: 'DB_PASSWORD', value: 'rotated-password' }] });
    expect(res.status).toBe(200);
    expect(await storedSecrets('deployments', d.id)).toEqual([{ name: 'DB_PASSWORD', value: 'rotated-password' }]);
  });

  it('a masked value for a name with no stored value → 400, nothing changed', async () => {
    const d = await createImage('secrets-unknown-mask');
    const res = await patch(d.id, {
      secrets: [
        { name: 'OPENAI_API_KEY', value: MASK },
        { name: 'NEVER_SET', value: MASK },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: `Secret NEVER_SET has the masked value '${MASK}' but no stored value to keep; send its real value.`,
    });
    expect(await revisionCount(d.id)).toBe(1);
    expect(await storedSecrets('deployments', d.id)).toEqual([
      { name: 'OPENAI_API_KEY', value: 'sk-patch-first-value' },
      { name: 'DB_PASSWORD', value: 'hunter2-patch-value' },
    ]);
  });

  it('a reserved name (LD_PRELOAD, NODE_OPTIONS, …) → 422 naming it, nothing changed', async () => {
    const d = await createImage('secrets-reserved');
    const res = await patch(d.id, {
      secrets: [
        { name: 'OPENAI_API_KEY', value: MASK },
        { name: 'NODE_OPTIONS', value: '--require /tmp/evil.js' },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(1);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'secrets', 1, 'name'], type: 'value_error' });
    expect(res.body.detail[0].msg).toMatch(/^Value error, 'NODE_OPTIONS' is a reserved name: /);
    expect(await revisionCount(d.id)).toBe(1);
    expect((await storedSecrets('deployments', d.id)).map((s) => s.name)).toEqual(['OPENAI_API_KEY', 'DB_PASSWORD']);
  });

  it('secret names are validated as on create', async () => {
    const d = await createImage('secrets-bad-name');
    const res = await patch(d.id, {
      secrets: [
        { name: 'A', value: '1' },
        { name: 'A', value: '2' },
        { name: '9x', value: '3' },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((i: any) => [i.loc, i.type])).toEqual([
      [['body', 'secrets', 2, 'name'], 'string_pattern_mismatch'],
      [['body', 'secrets', 1], 'value_error'],
    ]);
  });
});

describe('queueing and addressing', () => {
  it('revisions behind an in-flight one are QUEUED; the in-flight one keeps its slot', async () => {
    const d = await createImage('queue-behind');
    const second = await patch(d.id, { secrets: [] });
    const third = await patch(d.id, { source_config: { resource_spec: { cpu: 1 } } });
    const list = await api.http.get(`/v2/deployments/${d.id}/revisions`);
    expect(list.body.resources.map((r: any) => [r.id, r.status])).toEqual([
      [third.body.latest_revision_id, 'QUEUED'],
      [second.body.latest_revision_id, 'QUEUED'],
      [d.latest_revision_id, 'CREATING'],
    ]);
    // Only the first revision's job is in the outbox: queued ones wait for the slot.
    const jobs = await api.dataSource.query(
      `SELECT payload->>'revisionId' AS revision_id FROM outbox WHERE job_name = 'rollout.revision' AND payload->>'revisionId' = ANY($1)`,
      [[d.latest_revision_id, second.body.latest_revision_id, third.body.latest_revision_id]],
    );
    expect(jobs).toEqual([{ revision_id: d.latest_revision_id }]);
  });

  it('an upload deployment gets its first revision from a PATCH with the tarball (C10)', async () => {
    const created = await api.http.post('/v2/deployments', {
      name: 'cli-upload',
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
    });
    expect(created.body.latest_revision_id).toBeNull();
    // A finished upload of this deployment, as PUT /v2/uploads/{token} records it.
    await api.dataSource.query(
      `INSERT INTO uploads (object_path, deployment_id, completed_at) VALUES ('uploads/abc.tar.gz', $1, now())`,
      [created.body.id],
    );
    const res = await patch(created.body.id, {
      revision_source: 'internal_source',
      source_revision_config: { source_tarball_path: 'uploads/abc.tar.gz', langgraph_config_path: 'langgraph.json' },
      source_config: { install_command: 'pip install .' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.latest_revision_id).toEqual(expect.any(String));
    const revision = await api.http.get(`/v2/deployments/${created.body.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.body).toMatchObject({
      status: 'CREATING',
      source: 'upload',
      source_revision_config: { source_tarball_path: 'uploads/abc.tar.gz', graph_config_path: 'langgraph.json' },
    });
  });

  it('unknown id → 404; a malformed id → 422', async () => {
    const missing = randomUUID();
    const res = await patch(missing, { image_version: '1' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    const bad = await patch('nope', {});
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [{ loc: ['path', 'deployment_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }],
    });
  });
});
