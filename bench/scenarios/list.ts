import { randomBytes } from 'node:crypto';
import {
  createDatabaseIfMissing,
  createDataSource,
  dropDatabaseIfExists,
  runMigrations,
  type DataSource,
  type DeploymentFilter,
} from '@slipway/db';
import { DeploymentReads } from '../../services/api/src/reads/deployment-reads.js';
import { timeInterleaved } from '../support/measure.js';
import { atMost, type BenchRow } from '../support/report.js';
import type { BenchOptions } from './options.js';

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';

/** The measured workspace's data, shaped the same at every size. */
interface Fixture {
  dataSource: DataSource;
  workspaceId: string;
  /** Tag values: one on every 10th deployment, one on 5 deployments in all. */
  commonTag: string;
  rareTag: string;
  someIds: string[];
  drop: () => Promise<void>;
}

/**
 * A database of its own with `rows` deployments in the measured workspace (plus as many spread
 * over nine others, so the table is never just the workspace). Values repeat with fixed
 * frequencies, and a few are rare at every size, so a filter's cost can be compared across sizes:
 * every common value matches a fixed fraction, every rare one a fixed number of rows.
 */
async function fixture(rows: number): Promise<Fixture> {
  const name = `slipway_bench_list_${randomBytes(3).toString('hex')}`;
  await createDatabaseIfMissing(SERVER, name);
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const dataSource = createDataSource({ url: url.toString(), poolSize: 2, applicationName: 'slipway-bench' });
  await dataSource.initialize();
  await runMigrations(dataSource);
  const q = (sql: string, params: unknown[] = []) => dataSource.query(sql, params);
  const [{ id: org }] = await q(
    `INSERT INTO organizations (id, name) VALUES (gen_random_uuid(), 'bench') RETURNING id`,
  );
  const workspaces: Array<{ id: string }> = await q(
    `INSERT INTO workspaces (id, organization_id, name) SELECT gen_random_uuid(), $1, 'ws' || g FROM generate_series(0, 9) g RETURNING id`,
    [org],
  );
  const ws = workspaces[0]!.id;
  const [{ id: listener }] = await q(
    `INSERT INTO listeners (id, workspace_id, compute_type, compute_id, compute_config) ` +
      `VALUES (gen_random_uuid(), $1, 'k8s', 'bench', '{}') RETURNING id`,
    [ws],
  );
  // g < rows: the measured workspace; the rest spread over the other nine.
  await q(
    `INSERT INTO deployments (id, workspace_id, name, edge_name, source, status, deployment_type, listener_id, ` +
      `resource_spec, image_version, created_at)
     SELECT gen_random_uuid(),
            CASE WHEN g < $1 THEN $2::uuid ELSE (SELECT array_agg(id) FROM workspaces)[2 + g % 9] END,
            CASE WHEN g % ($1 / 5) = 7 THEN 'rare-needle-' || g ELSE 'agent-' || g END,
            'list-' || g,
            CASE WHEN g % 4 = 0 THEN 'external_container' ELSE 'repohost' END,
            (ARRAY['READY','READY','READY','UNUSED','AWAITING_DATABASE'])[1 + g % 5],
            CASE WHEN g % 4 = 0 THEN NULL ELSE (ARRAY['dev','prod','dev_free'])[1 + g % 3] END,
            CASE WHEN g % 4 = 0 AND g < $1 THEN $3::uuid END,
            '{}'::jsonb,
            CASE WHEN g % ($1 / 5) = 11 THEN '9.9-rare' ELSE '0.' || (g % 7) END,
            now() - (g || ' seconds')::interval
       FROM generate_series(0, 2 * $1 - 1) g`,
    [rows, ws, listener],
  );
  const [{ id: key }] = await q(
    `INSERT INTO tag_keys (id, workspace_id, key) VALUES (gen_random_uuid(), $1, 'team') RETURNING id`,
    [ws],
  );
  const values: Array<{ id: string }> = await q(
    `INSERT INTO tag_values (id, tag_key_id, value) VALUES (gen_random_uuid(), $1, 'common'), (gen_random_uuid(), $1, 'rare') RETURNING id`,
    [key],
  );
  const [commonTag, rareTag] = values.map((v) => v.id) as [string, string];
  await q(
    `INSERT INTO deployment_tag_values (deployment_id, tag_value_id)
     SELECT id, $2::uuid FROM (SELECT id, row_number() OVER (ORDER BY created_at) n FROM deployments ` +
      `WHERE workspace_id = $1) d WHERE n % 10 = 0
     UNION ALL
     SELECT id, $3::uuid FROM (SELECT id, row_number() OVER (ORDER BY created_at) n FROM deployments ` +
      `WHERE workspace_id = $1) d WHERE n % ($4::int / 5) = 3`,
    [ws, commonTag, rareTag, rows],
  );
  await q('ANALYZE');
  const someIds = (await q(`SELECT id FROM deployments WHERE workspace_id = $1 ORDER BY random() LIMIT 5`, [ws])).map(
    (r: { id: string }) => r.id,
  );
  return {
    dataSource,
    workspaceId: ws,
    commonTag,
    rareTag,
    someIds,
    drop: async () => {
      await dataSource.destroy();
      await dropDatabaseIfExists(SERVER, name);
    },
  };
}

const CASES: Array<[string, (f: Fixture) => DeploymentFilter, number?]> = [
  ['no filter', () => ({})],
  ['offset 500', () => ({}), 500],
  ['status=READY (common)', () => ({ status: 'READY' })],
  ['status=AWAITING_DATABASE', () => ({ status: 'AWAITING_DATABASE' })],
  ['name (exact)', () => ({ name: 'agent-10' })],
  ['name_contains (common)', () => ({ nameContains: 'agent-1' })],
  ['name_contains (rare)', () => ({ nameContains: 'needle' })],
  ['deployment_type=prod', () => ({ deploymentType: 'prod' })],
  ['image_version (common)', () => ({ imageVersion: '0.3' })],
  ['image_version (rare)', () => ({ imageVersion: '9.9-rare' })],
  ['remote_reconciled=true', () => ({ remoteReconciled: true })],
  ['remote_reconciled=false', () => ({ remoteReconciled: false })],
  ['tag_value_ids (common)', (f) => ({ tagValueIds: [f.commonTag] })],
  ['tag_value_ids (rare)', (f) => ({ tagValueIds: [f.rareTag] })],
  ['deployment_ids (5)', (f) => ({ deploymentIds: f.someIds })],
];

/**
 * List queries (every filter of the list endpoint, first page of 20) on a small and a large
 * workspace: the query must not get slower as the workspace grows. p99 of the repository's
 * query, large ÷ small, timed alternately (one small run, one large run, …) after a warm-up of each.
 */
export async function listScenario(o: BenchOptions): Promise<BenchRow[]> {
  const [smallRows, largeRows] = o.listRows;
  const small = await fixture(smallRows);
  const large = await fixture(largeRows);
  try {
    const rows: BenchRow[] = [];
    for (const [label, filter, offset] of CASES) {
      const page = { limit: 20, offset: offset ?? 0 };
      const query = (f: Fixture) => () =>
        new DeploymentReads(f.dataSource.manager).list(f.workspaceId, filter(f), page);
      const [a, b] = await timeInterleaved([query(small), query(large)], o.listRuns);
      rows.push(atMost(`list: ${label}`, `p99 ${largeRows / 1000}k vs ${smallRows / 1000}k`, b!.p99, a!.p99, 2));
    }
    return rows;
  } finally {
    await small.drop();
    await large.drop();
  }
}
