import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentDatabaseName } from '@slipway/domain';
import { HttpClient } from '../support/http.js';
import { createListener } from '../support/fixtures.js';
import { repohostFixture, type RepohostFixture } from '../support/git-fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** POST /v2/deployments (docs/api.md, Deployments; Uploads and the deploy CLIs): validation, aliases, defaults, tenancy, names. */

let api: TestApi;
let listenerId: string;
/** A real git repository behind a `local` integration: what repohost deployments must name (C4). */
let repo: RepohostFixture;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'create-cluster');
  repo = await repohostFixture(api);
});
afterAll(async () => {
  await api?.close();
});

const image = (name: string, over: { source_config?: object; source_revision_config?: object; top?: object } = {}) => ({
  name,
  source: 'external_container',
  source_config: { listener_id: listenerId, ...over.source_config },
  source_revision_config: { image_uri: 'registry.example/agent:1.0.0', ...over.source_revision_config },
  ...over.top,
});

const repohost = (
  name: string,
  over: { source_config?: object; source_revision_config?: object; top?: object } = {},
) => ({
  name,
  source: 'repohost',
  source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl, ...over.source_config },
  source_revision_config: { repo_ref: 'main', ...over.source_revision_config },
  ...over.top,
});

const post = (body: unknown) => api.http.post('/v2/deployments', body);

async function countRows(
  table: 'deployments' | 'revisions' | 'tracing_projects',
  where = 'true',
  params: unknown[] = [],
): Promise<number> {
  const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params);
  return row.n;
}

/** The numeric defaults of C4 (limits 2×, queue = API) plus the fixed sizes of the rest. */
const specFor = (cpu: number, memory: number, min: number, max: number) => ({
  min_scale: min,
  max_scale: max,
  cpu,
  cpu_limit: cpu * 2,
  memory_mb: memory,
  memory_limit_mb: memory * 2,
  queue_enabled: false,
  queue_min_scale: min,
  queue_max_scale: max,
  queue_cpu: cpu,
  queue_cpu_limit: cpu * 2,
  queue_memory_mb: memory,
  queue_memory_limit_mb: memory * 2,
  orchestrator_cpu: 0.5,
  orchestrator_cpu_limit: 1,
  orchestrator_memory_mb: 512,
  orchestrator_memory_limit_mb: 1024,
  redis_memory_mb: 256,
  db_cpu: 0.5,
  db_cpu_limit: 1,
  db_memory_mb: 1024,
  db_memory_limit_mb: 2048,
  db_storage_gi: 10,
  db_max_connections: 100,
  labels: {},
  annotations: {},
  service_account_name: null,
  image_pull_secrets: [],
  volumes: [],
  volume_mounts: [],
  init_containers: [],
  sidecars: [],
});

describe('name validation', () => {
  it.each([
    ['ab', 'string_too_short', 'String should have at least 3 characters'],
    ['a'.repeat(64), 'string_too_long', 'String should have at most 63 characters'],
    ['Agent', 'string_pattern_mismatch', "String should match pattern '^[a-z][a-z0-9-]*[a-z0-9]$'"],
    ['1agent', 'string_pattern_mismatch', "String should match pattern '^[a-z][a-z0-9-]*[a-z0-9]$'"],
    ['agent-', 'string_pattern_mismatch', "String should match pattern '^[a-z][a-z0-9-]*[a-z0-9]$'"],
    ['my_agent', 'string_pattern_mismatch', "String should match pattern '^[a-z][a-z0-9-]*[a-z0-9]$'"],
  ])('%j → 422 %s', async (name, type, msg) => {
    const res = await post(image(name));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body', 'name'], msg, type }] });
  });

  it('accepts the 3- and 63-character extremes', async () => {
    expect((await post(image('a-1'))).status).toBe(201);
    const long = `a${'b'.repeat(61)}c`;
    const res = await post(image(long));
    expect(res.status).toBe(201);
    expect(res.body.name).toBe(long);
  });
});

describe('source and required fields', () => {
  it('reports every missing top-level field at once', async () => {
    const res = await post({});
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc, d.type])).toEqual([
      [['body', 'name'], 'missing'],
      [['body', 'source'], 'missing'],
      [['body', 'source_config'], 'missing'],
      [['body', 'source_revision_config'], 'missing'],
    ]);
  });

  it('an unknown source → 422 enum listing the accepted values', async () => {
    const res = await post(image('src-unknown', { top: { source: 'gitlab' } }));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source'],
          msg:
            "Input should be 'repohost', 'external_container', 'upload', 'internal_docker', 'github', " +
            "'external_docker' or 'internal_source'",
          type: 'enum',
        },
      ],
    });
  });

  it('external_container needs image_uri', async () => {
    const res = await post({
      name: 'ext-missing',
      source: 'external_container',
      source_config: {},
      source_revision_config: {},
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_revision_config', 'image_uri'],
          msg: 'Field required for external_container deployments',
          type: 'missing',
        },
      ],
    });
    expect(await countRows('deployments', 'name = $1', ['ext-missing'])).toBe(0);
  });

  it('external_container without listener_id in a workspace with listeners: 400 listing them, nothing written', async () => {
    const res = await post({
      name: 'ext-no-listener',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: 'registry.example/a:1' },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.detail).toBe(
      `'source_config.listener_id' is required for workspace with available listener IDs: [${listenerId}]`,
    );
    expect(await countRows('deployments', 'name = $1', ['ext-no-listener'])).toBe(0);
  });

  it('repohost needs integration_id and repo_url', async () => {
    const res = await post({
      name: 'repo-missing',
      source: 'repohost',
      source_config: { integration_id: null },
      source_revision_config: {},
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'integration_id'],
          msg: 'Field required for repohost deployments',
          type: 'missing',
        },
        { loc: ['body', 'source_config', 'repo_url'], msg: 'Field required for repohost deployments', type: 'missing' },
      ],
    });
  });

  it('refuses fields of another source', async () => {
    const repo = await post(
      repohost('repo-cross', {
        source_config: { listener_id: listenerId },
        source_revision_config: { image_uri: 'x/y:1' },
      }),
    );
    expect(repo.status).toBe(422);
    expect(repo.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'listener_id'],
          msg: 'Value error, listener_id is only for external_container deployments',
          type: 'value_error',
        },
        {
          loc: ['body', 'source_revision_config', 'image_uri'],
          msg: 'Value error, image_uri is only for external_container deployments',
          type: 'value_error',
        },
      ],
    });

    const ext = await post(
      image('ext-cross', { source_config: { integration_id: randomUUID(), repo_url: 'https://git.example/a/b' } }),
    );
    expect(ext.status).toBe(422);
    expect(ext.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'integration_id'],
          msg: 'Value error, integration_id is only for repohost deployments',
          type: 'value_error',
        },
        {
          loc: ['body', 'source_config', 'repo_url'],
          msg: 'Value error, repo_url is only for repohost deployments',
          type: 'value_error',
        },
      ],
    });
  });

  it('refuses repository and listener fields on an upload deployment (repo_url included)', async () => {
    const res = await post({
      name: 'upload-cross',
      source: 'upload',
      source_config: { listener_id: listenerId, integration_id: randomUUID(), repo_url: 'https://git.example/a/b' },
      source_revision_config: { image_uri: 'x/y:1' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc, d.type])).toEqual([
      [['body', 'source_config', 'listener_id'], 'value_error'],
      [['body', 'source_config', 'integration_id'], 'value_error'],
      [['body', 'source_config', 'repo_url'], 'value_error'],
      [['body', 'source_revision_config', 'image_uri'], 'value_error'],
    ]);
  });

  it.each([
    ['top level', { top: { deployment_type: 'dev' } }, ['body', 'deployment_type']],
    ['in source_config', { source_config: { deployment_type: 'prod' } }, ['body', 'source_config', 'deployment_type']],
  ])('external_container with a deployment_type (%s) → 422 at the field', async (_where, over, loc) => {
    const res = await post(image('ext-typed', over));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc,
          msg: 'Value error, deployment_type must be null for external_container deployments',
          type: 'value_error',
        },
      ],
    });
  });

  it('reports the per-source, deployment_type and resource_spec problems of one request together (C2)', async () => {
    const res = await post({
      name: 'ext-many-problems',
      source: 'external_container',
      deployment_type: 'prod',
      source_config: { listener_id: listenerId, resource_spec: { min_scale: 3, max_scale: 2 } },
      source_revision_config: {},
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc, d.type])).toEqual(
      expect.arrayContaining([
        [['body', 'deployment_type'], 'value_error'],
        [['body', 'source_config', 'resource_spec', 'min_scale'], 'value_error'],
        [['body', 'source_revision_config', 'image_uri'], 'missing'],
      ]),
    );
    expect(res.body.detail).toHaveLength(3);
  });
});

describe('resource_spec validation', () => {
  const withSpec = (name: string, resource_spec: object) => image(name, { source_config: { resource_spec } });

  it('min_scale > max_scale and cpu > cpu_limit → value_error at each field', async () => {
    const res = await post(withSpec('spec-cross', { min_scale: 3, max_scale: 2, cpu: 4, cpu_limit: 2 }));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'resource_spec', 'min_scale'],
          msg: 'Value error, min_scale must not exceed max_scale',
          type: 'value_error',
        },
        {
          loc: ['body', 'source_config', 'resource_spec', 'cpu'],
          msg: 'Value error, cpu must not exceed cpu_limit',
          type: 'value_error',
        },
      ],
    });
  });

  it('a request above the default limit is refused too (memory 4096 > the given limit 1024)', async () => {
    const res = await post(withSpec('spec-mem', { memory_mb: 4096, memory_limit_mb: 1024 }));
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'source_config', 'resource_spec', 'memory_mb'],
        msg: 'Value error, memory_mb must not exceed memory_limit_mb',
        type: 'value_error',
      },
    ]);
  });

  it('negative cpu, fractional memory, zero max_scale → 422 per field', async () => {
    const res = await post(withSpec('spec-neg', { cpu: -1, memory_mb: 1.5, max_scale: 0 }));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'resource_spec', 'max_scale'],
          msg: 'Input should be greater than or equal to 1',
          type: 'greater_than_equal',
        },
        {
          loc: ['body', 'source_config', 'resource_spec', 'cpu'],
          msg: 'Input should be greater than 0',
          type: 'greater_than',
        },
        {
          loc: ['body', 'source_config', 'resource_spec', 'memory_mb'],
          msg: 'Input should be a valid integer, got a number with a fractional part',
          type: 'int_from_float',
        },
      ],
    });
  });

  it('a container without image → missing at its image; without name → missing at its name', async () => {
    const res = await post(
      withSpec('spec-container', { sidecars: [{ name: 'log-shipper' }], init_containers: [{ image: 'busybox:1' }] }),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'source_config', 'resource_spec', 'init_containers', 0, 'name'],
          msg: 'Field required',
          type: 'missing',
        },
        {
          loc: ['body', 'source_config', 'resource_spec', 'sidecars', 0, 'image'],
          msg: 'Field required',
          type: 'missing',
        },
      ],
    });
  });

  it('fractional CPU and given fields are kept; the rest is defaulted from them', async () => {
    const res = await post(
      withSpec('spec-ok', { cpu: 0.25, memory_mb: 300, max_scale: 3, sidecars: [{ name: 'log', image: 'busybox:1' }] }),
    );
    expect(res.status).toBe(201);
    expect(res.body.source_config.resource_spec).toEqual({
      ...specFor(0.25, 300, 1, 3),
      sidecars: [{ name: 'log', image: 'busybox:1' }],
    });
  });
});

describe('secrets validation', () => {
  it('duplicate names → 422 value_error at the duplicate', async () => {
    const res = await post(
      image('dup-secrets', {
        top: {
          secrets: [
            { name: 'TOKEN', value: 'a' },
            { name: 'TOKEN', value: 'b' },
          ],
        },
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ loc: ['body', 'secrets', 1], msg: 'Value error, list items must be unique', type: 'value_error' }],
    });
  });

  it.each(['1TOKEN', 'MY-TOKEN', 'has space', ''])('name %j → 422 at its name', async (name) => {
    const res = await post(image('bad-secret', { top: { secrets: [{ name, value: 'v' }] } }));
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'secrets', 0, 'name'],
        msg:
          name === ''
            ? 'String should have at least 1 character'
            : "String should match pattern '^[A-Za-z_][A-Za-z0-9_]*$'",
        type: name === '' ? 'string_too_short' : 'string_pattern_mismatch',
      },
    ]);
  });

  it('reserved names (runtime-set, loader and interpreter variables) → 422 naming each, nothing written', async () => {
    const res = await post(
      image('reserved-secrets', {
        top: {
          secrets: [
            { name: 'OPENAI_API_KEY', value: 'ok' },
            { name: 'LD_PRELOAD', value: '/tmp/x.so' },
            { name: 'NODE_OPTIONS', value: '--require /tmp/x.js' },
            { name: 'PATH', value: '/tmp' },
            { name: 'DATABASE_URI', value: 'postgres://elsewhere/x' },
            { name: 'LD_AUDIT_ANYTHING', value: 'x' },
          ],
        },
      }),
    );
    expect(res.status).toBe(422);
    const detail = res.body.detail as Array<{ loc: unknown[]; msg: string; type: string }>;
    expect(detail.map((d) => d.loc)).toEqual([1, 2, 3, 4, 5].map((i) => ['body', 'secrets', i, 'name']));
    expect(detail.map((d) => d.type)).toEqual(Array(5).fill('value_error'));
    for (const [i, name] of ['LD_PRELOAD', 'NODE_OPTIONS', 'PATH', 'DATABASE_URI', 'LD_AUDIT_ANYTHING'].entries()) {
      expect(detail[i]!.msg).toMatch(
        new RegExp(`^Value error, '${name}' is a reserved name: .* \\(reserved: PATH, HOME, .*LD_\\*`),
      );
    }
    expect(await countRows('deployments', 'name = $1', ['reserved-secrets'])).toBe(0);
  });

  it('a masked value on create → 400 (there is no stored value to keep), nothing written', async () => {
    const res = await post(
      image('masked-create', {
        top: {
          secrets: [
            { name: 'OK', value: 'real' },
            { name: 'COPIED', value: '********' },
          ],
        },
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: "Secret COPIED has the masked value '********' but no stored value to keep; send its real value.",
    });
    expect(await countRows('deployments', 'name = $1', ['masked-create'])).toBe(0);
  });

  it('secrets default to []', async () => {
    const res = await post(image('no-secrets'));
    expect(res.status).toBe(201);
    expect(res.body.secrets).toEqual([]);
    const [row] = await api.dataSource.query(`SELECT secrets_sealed FROM deployments WHERE id = $1`, [res.body.id]);
    expect(row.secrets_sealed).toBeNull();
  });
});

describe('aliases and defaults', () => {
  it('github → repohost, deployment_type dev, dev resources, graph_config_path langgraph.json', async () => {
    const body = repohost('gh-alias', { top: { source: 'github' } });
    const res = await post(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      source: 'repohost',
      deployment_type: 'dev',
      source_config: {
        deployment_type: 'dev',
        integration_id: repo.integrationId,
        repo_url: repo.repoUrl,
        listener_id: null,
      },
      source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json', image_uri: null },
      url: null,
      tag_value_ids: [],
    });
    expect(res.body.source_config.resource_spec).toEqual(specFor(1, 1024, 1, 1));
    const [revision] = await api.dataSource.query(`SELECT source, status FROM revisions WHERE id = $1`, [
      res.body.latest_revision_id,
    ]);
    expect(revision).toEqual({ source: 'repohost', status: 'CREATING' });
    const jobs = await api.dataSource.query(`SELECT job_name FROM outbox WHERE payload->>'revisionId' = $1`, [
      res.body.latest_revision_id,
    ]);
    expect(jobs).toEqual([{ job_name: 'build.revision' }]);
  });

  it('langgraph_config_path is accepted as graph_config_path', async () => {
    const res = await post(
      repohost('lg-alias', { source_revision_config: { langgraph_config_path: 'agents/langgraph.json' } }),
    );
    expect(res.status).toBe(201);
    expect(res.body.source_revision_config.graph_config_path).toBe('agents/langgraph.json');
    const revision = await api.http.get(`/v2/deployments/${res.body.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.body.source_revision_config.graph_config_path).toBe('agents/langgraph.json');
  });

  it.each([
    ['dev_free', specFor(0.5, 512, 1, 1)],
    ['dev', specFor(1, 1024, 1, 1)],
    ['prod', specFor(2, 2048, 2, 10)],
  ])('deployment_type %s → its resource defaults (limits 2×, queue = API)', async (type, spec) => {
    const res = await post(repohost(`typed-${type.replace('_', '-')}`, { top: { deployment_type: type } }));
    expect(res.status).toBe(201);
    expect(res.body.deployment_type).toBe(type);
    expect(res.body.source_config.resource_spec).toEqual(spec);
    const [revision] = await api.dataSource.query(`SELECT resource_spec FROM revisions WHERE id = $1`, [
      res.body.latest_revision_id,
    ]);
    expect(revision.resource_spec).toEqual(spec);
  });

  it('source_config.deployment_type works like the top-level field', async () => {
    const res = await post(repohost('typed-in-config', { source_config: { deployment_type: 'prod' } }));
    expect(res.status).toBe(201);
    expect(res.body.deployment_type).toBe('prod');
    expect(res.body.source_config.resource_spec).toMatchObject({
      cpu: 2,
      memory_mb: 2048,
      min_scale: 2,
      max_scale: 10,
    });
  });

  it.each(['internal_source', 'upload'])(
    '%s without a tarball → upload deployment with latest_revision_id null (C10)',
    async (source) => {
      const name = `cli-${source.replace('_', '-')}`;
      const res = await post({
        name,
        source,
        source_config: { deployment_type: 'dev_free' },
        source_revision_config: { langgraph_config_path: 'langgraph.json' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        name,
        source: 'upload',
        deployment_type: 'dev_free',
        latest_revision_id: null,
        active_revision_id: null,
      });
      expect(await countRows('revisions', 'deployment_id = $1', [res.body.id])).toBe(0);
      const jobs = await api.dataSource.query(
        `SELECT job_name, payload FROM outbox WHERE payload->>'deploymentId' = $1`,
        [res.body.id],
      );
      expect(jobs).toEqual([
        { job_name: 'provision.deployment', payload: { deploymentId: res.body.id, requestId: expect.any(String) } },
      ]);
    },
  );

  it('unknown body fields are ignored', async () => {
    const res = await post({
      ...image('extras'),
      tracked_packages: ['x'],
      route_through_gateway: true,
      source_config: { listener_id: listenerId, shiny: 1 },
    });
    expect(res.status).toBe(201);
    expect(res.body.source_config).not.toHaveProperty('shiny');
  });
});

describe('listeners', () => {
  it(
    "a listener's deployment is created AWAITING_DATABASE with its database name, and its create " +
      "records its first revision's rollout.revision alone (no provision.deployment)",
    async () => {
      const res = await post(image('ext-named-at-create'));
      expect(res.status).toBe(201);
      expect(res.body.status).toBe('AWAITING_DATABASE');
      const [row] = await api.dataSource.query(`SELECT status, database_name FROM deployments WHERE id = $1`, [
        res.body.id,
      ]);
      expect(row).toEqual({
        status: 'AWAITING_DATABASE',
        database_name: deploymentDatabaseName('ext-named-at-create', res.body.id),
      });
      const jobs = await api.dataSource.query(
        `SELECT job_name FROM outbox WHERE payload->>'deploymentId' = $1 OR payload->>'revisionId' = $2`,
        [res.body.id, res.body.latest_revision_id],
      );
      expect(jobs).toEqual([{ job_name: 'rollout.revision' }]);
      // Its creation event says AWAITING_DATABASE; READY follows when the deployer begins its rollout.
      const events = await api.dataSource.query(
        `SELECT type, data FROM events WHERE deployment_id = $1 AND type LIKE 'deployment.%' ORDER BY uid`,
        [res.body.id],
      );
      expect(events).toEqual([
        { type: 'deployment.created', data: { name: 'ext-named-at-create', status: 'AWAITING_DATABASE' } },
      ]);
    },
  );

  it("a listener's deployment deleted before its rollout begins goes to teardown as any other", async () => {
    const res = await post(image('ext-deleted-unbegun'));
    expect(res.status).toBe(201);
    expect((await api.http.delete(`/v2/deployments/${res.body.id}`)).status).toBe(204);
    expect((await api.http.get(`/v2/deployments/${res.body.id}`)).body.status).toBe('AWAITING_DELETE');
    const jobs = await api.dataSource.query(
      `SELECT job_name FROM outbox WHERE payload->>'deploymentId' = $1 OR payload->>'revisionId' = $2 ORDER BY job_name`,
      [res.body.id, res.body.latest_revision_id],
    );
    expect(jobs).toEqual([{ job_name: 'rollout.revision' }, { job_name: 'teardown.deployment' }]);
    const events = await api.dataSource.query(
      `SELECT data FROM events WHERE deployment_id = $1 AND type = 'deployment.status_changed' ORDER BY uid`,
      [res.body.id],
    );
    expect(events).toEqual([{ data: { from: 'AWAITING_DATABASE', to: 'AWAITING_DELETE' } }]);
    const [revision] = await api.dataSource.query(`SELECT status FROM revisions WHERE id = $1`, [
      res.body.latest_revision_id,
    ]);
    expect(revision).toEqual({ status: 'INTERRUPTED' });
  });

  it('an unknown listener → 404', async () => {
    const missing = randomUUID();
    const res = await post(image('ext-no-listener', { source_config: { listener_id: missing } }));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Listener ID ${missing} not found.` });
  });

  it("another workspace's listener → 404, and nothing is written", async () => {
    const otherWorkspaceId = randomUUID();
    await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other')`, [
      otherWorkspaceId,
      api.organizationId,
    ]);
    const otherKey = await api.mintKey({ workspaceId: otherWorkspaceId, role: 'admin' });
    const other = new HttpClient(api.baseUrl, otherKey);
    const theirs = await other.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'their-cluster',
      compute_config: { k8s_namespaces: null },
    });
    expect(theirs.status).toBe(201);

    const res = await post(image('ext-foreign-listener', { source_config: { listener_id: theirs.body.id } }));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Listener ID ${theirs.body.id} not found.` });
    expect(await countRows('deployments', 'name = $1', ['ext-foreign-listener'])).toBe(0);
    const [tp] = await api.dataSource.query(
      `SELECT count(*)::int AS n FROM tracing_projects WHERE name = 'ext-foreign-listener'`,
    );
    expect(tp.n).toBe(0);

    // And the other workspace, using its own listener, is fine; the name is per workspace.
    const ok = await other.post(
      '/v2/deployments',
      image('ext-foreign-listener', { source_config: { listener_id: theirs.body.id } }),
    );
    expect(ok.status).toBe(201);
    expect(ok.body.tenant_id).toBe(otherWorkspaceId);
    expect((await api.http.get(`/v2/deployments/${ok.body.id}`)).status).toBe(404);
  });

  it('a namespace the listener does not serve → 400; one it serves → 201', async () => {
    const bad = await post(image('ext-bad-ns', { source_config: { listener_config: { k8s_namespace: 'prod' } } }));
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      detail: `Namespace 'prod' is not one of listener ${listenerId}'s namespaces (agents, staging).`,
    });
    const good = await post(image('ext-good-ns', { source_config: { listener_config: { k8s_namespace: 'staging' } } }));
    expect(good.status).toBe(201);
    expect(good.body.source_config.listener_config).toEqual({ k8s_namespace: 'staging' });
  });
});

describe('names and tracing projects', () => {
  it('a name taken by a live deployment → 409, and a second tracing project is not made', async () => {
    expect((await post(image('taken'))).status).toBe(201);
    const dup = await post(repohost('taken'));
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({
      detail: `A deployment or tracing project named 'taken' already exists in workspace ID '${api.workspaceId}'.`,
    });
    expect(await countRows('deployments', 'name = $1', ['taken'])).toBe(1);
  });

  it('concurrent creates of one name: exactly one wins, the others get 409', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => post(image('race-name'))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    expect(await countRows('deployments', 'name = $1', ['race-name'])).toBe(1);
    expect(await countRows('tracing_projects', 'name = $1', ['race-name'])).toBe(1);
  });

  it('a name whose tracing project belongs to another deployment → 409, and nothing is written', async () => {
    const owner = await post(image('project-owner'));
    expect(owner.status).toBe(201);
    // The project of the name asked for is attached to a deployment of another name.
    await api.dataSource.query(`UPDATE tracing_projects SET name = 'held-project' WHERE id = $1`, [
      owner.body.tracing_project_id,
    ]);
    const res = await post(image('held-project'));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: `A deployment or tracing project named 'held-project' already exists in workspace ID '${api.workspaceId}'.`,
    });
    expect(await countRows('deployments', 'name = $1', ['held-project'])).toBe(0);
    const [tp] = await api.dataSource.query(`SELECT deployment_id FROM tracing_projects WHERE id = $1`, [
      owner.body.tracing_project_id,
    ]);
    expect(tp.deployment_id).toBe(owner.body.id);
  });

  it('once the deployment row is gone the name is free again and the surviving tracing project is re-attached', async () => {
    const first = await post(image('reborn'));
    expect(first.status).toBe(201);
    const tracingProjectId = first.body.tracing_project_id;
    expect(tracingProjectId).toEqual(expect.any(String));
    const [tp] = await api.dataSource.query(`SELECT name, deployment_id FROM tracing_projects WHERE id = $1`, [
      tracingProjectId,
    ]);
    expect(tp).toEqual({ name: 'reborn', deployment_id: first.body.id });

    // Teardown finished: the row is gone (what the deployer does at the end of teardown).
    await api.dataSource.query(`DELETE FROM deployments WHERE id = $1`, [first.body.id]);
    expect((await api.http.get(`/v2/deployments/${first.body.id}`)).status).toBe(404);

    const second = await post(repohost('reborn'));
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.body.tracing_project_id).toBe(tracingProjectId);
    const [after] = await api.dataSource.query(`SELECT deployment_id FROM tracing_projects WHERE id = $1`, [
      tracingProjectId,
    ]);
    expect(after.deployment_id).toBe(second.body.id);
  });
});
