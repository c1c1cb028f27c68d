import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The operator's ceilings on a resource_spec (SLIPWAY_MAX_MEMORY_MB, SLIPWAY_MAX_CPU,
 * SLIPWAY_MAX_DISK_GI, SLIPWAY_MAX_DB_CONNECTIONS): a create or PATCH asking for more answers
 * 422 with a message naming the ceiling, and writes nothing; what it left out is lowered to the
 * ceiling.
 */

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi({
    SLIPWAY_MAX_MEMORY_MB: '1000',
    SLIPWAY_MAX_CPU: '2',
    SLIPWAY_MAX_DISK_GI: '20',
    SLIPWAY_MAX_DB_CONNECTIONS: '50',
  });
});
afterAll(async () => {
  await api?.close();
});

const create = (resourceSpec: Record<string, unknown>, name = `c-${randomUUID().slice(0, 8)}`) =>
  api.http.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: 'dev', resource_spec: resourceSpec },
    source_revision_config: {},
  });

const deploymentsNamed = async (name: string) =>
  Number((await api.dataSource.query(`SELECT count(*) AS n FROM deployments WHERE name = $1`, [name]))[0].n);

const loc = (field: string) => ['body', 'source_config', 'resource_spec', field];

describe('resource_spec ceilings', () => {
  it('a create above the memory ceiling → 422 naming SLIPWAY_MAX_MEMORY_MB; nothing written', async () => {
    const name = `mem-${randomUUID().slice(0, 8)}`;
    const res = await create({ memory_mb: 1024, memory_limit_mb: 1024, cpu: 1, cpu_limit: 1 }, name);
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: loc('memory_mb'),
        msg: "Input should be less than or equal to 1000 (the server's ceiling SLIPWAY_MAX_MEMORY_MB; memory_mb is 1024)",
        type: 'less_than_equal',
      },
      {
        loc: loc('memory_limit_mb'),
        msg: "Input should be less than or equal to 1000 (the server's ceiling SLIPWAY_MAX_MEMORY_MB; memory_limit_mb is 1024)",
        type: 'less_than_equal',
      },
    ]);
    expect(await deploymentsNamed(name)).toBe(0);
  });

  it('what the caller left out is lowered to its ceiling: memory_mb 600 gets memory_limit_mb 1000, not 1200', async () => {
    const res = await create({ memory_mb: 600, cpu: 1.5 });
    expect(res.status, res.text).toBe(201);
    expect(res.body.source_config.resource_spec).toMatchObject({
      memory_mb: 600,
      memory_limit_mb: 1000,
      cpu: 1.5,
      cpu_limit: 2,
      db_memory_limit_mb: 1000,
      db_max_connections: 50,
    });
  });

  it('CPU, disk and database connections above their ceilings → 422 naming each', async () => {
    const res = await create({ memory_mb: 256, cpu: 1, cpu_limit: 3, db_storage_gi: 21, db_max_connections: 51 });
    expect(res.status, res.text).toBe(422);
    const byField = Object.fromEntries(
      res.body.detail.map((d: { loc: string[]; msg: string }) => [d.loc.at(-1), d.msg]),
    );
    expect(Object.keys(byField).sort()).toEqual(['cpu_limit', 'db_max_connections', 'db_storage_gi']);
    expect(byField.cpu_limit).toContain('SLIPWAY_MAX_CPU');
    expect(byField.db_storage_gi).toContain('SLIPWAY_MAX_DISK_GI');
    expect(byField.db_max_connections).toContain('SLIPWAY_MAX_DB_CONNECTIONS');
  });

  it('a spec at the ceilings is accepted', async () => {
    const res = await create({
      memory_mb: 500,
      memory_limit_mb: 1000,
      cpu: 1,
      cpu_limit: 2,
      db_storage_gi: 20,
      db_max_connections: 50,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.source_config.resource_spec).toMatchObject({ memory_mb: 500, memory_limit_mb: 1000, cpu_limit: 2 });
  });

  it('a PATCH above a ceiling → 422 naming it; the stored spec and revisions stay as they were', async () => {
    const created = await create({ memory_mb: 256, cpu: 1 });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    const revisions = Number(
      (await api.dataSource.query(`SELECT count(*) AS n FROM revisions WHERE deployment_id = $1`, [id]))[0].n,
    );
    const patched = await api.http.patch(`/v2/deployments/${id}`, {
      source_config: { resource_spec: { memory_mb: 256, cpu: 2, cpu_limit: 4 } },
    });
    expect(patched.status, patched.text).toBe(422);
    expect(patched.body.detail).toEqual([
      {
        loc: loc('cpu_limit'),
        msg: "Input should be less than or equal to 2 (the server's ceiling SLIPWAY_MAX_CPU; cpu_limit is 4)",
        type: 'less_than_equal',
      },
    ]);
    const after = await api.http.get(`/v2/deployments/${id}`);
    expect(after.body.source_config.resource_spec).toMatchObject({ memory_mb: 256, cpu: 1, cpu_limit: 2 });
    expect(
      Number((await api.dataSource.query(`SELECT count(*) AS n FROM revisions WHERE deployment_id = $1`, [id]))[0].n),
    ).toBe(revisions);
  });
});
