/**
 * List-endpoint query cost at 100k deployments (STYLE 18), as ratios against a baseline measured
 * in the same run: a primary-key lookup. Absolute times on these shared machines are noise;
 * ratios and plans are not. Usage: `pnpm bench:list [rows]` (default 100000). Creates and drops
 * its own database.
 */
import { randomBytes } from 'node:crypto';
import { createDatabaseIfMissing, createDataSource, DeploymentRepository, dropDatabaseIfExists, runMigrations } from '@slipway/db';

const ROWS = Number(process.argv[2] ?? 100_000);
const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const NAME = `slipway_bench_${randomBytes(3).toString('hex')}`;
const url = new URL(SERVER);
url.pathname = `/${NAME}`;

async function time(fn: () => Promise<unknown>, runs = 30): Promise<number> {
  for (let i = 0; i < 3; i++) await fn(); // warm caches and plans
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!; // median
}

async function main(): Promise<void> {
  await createDatabaseIfMissing(SERVER, NAME);
  const ds = createDataSource({ url: url.toString(), poolSize: 2 });
  try {
    await ds.initialize();
    await runMigrations(ds);
    const [{ id: org }] = await ds.query(`INSERT INTO organizations (id, name) VALUES (gen_random_uuid(), 'bench') RETURNING id`);
    const workspaces: Array<{ id: string }> = await ds.query(
      `INSERT INTO workspaces (id, organization_id, name) SELECT gen_random_uuid(), $1, 'ws' || g FROM generate_series(1, 10) g RETURNING id`,
      [org],
    );
    const ws = workspaces[0]!.id;
    // 100k deployments over 10 workspaces, mixed statuses and types, spread over a year.
    await ds.query(
      `INSERT INTO deployments (id, workspace_id, name, source, status, deployment_type, resource_spec, image_version, created_at)
       SELECT gen_random_uuid(), (SELECT array_agg(id) FROM workspaces)[1 + g % 10], 'agent-' || g, 'repohost',
              (ARRAY['READY','READY','READY','UNUSED','AWAITING_DATABASE'])[1 + g % 5],
              (ARRAY['dev','prod','dev_free'])[1 + g % 3], '{}'::jsonb, '0.' || (g % 7),
              now() - (g || ' minutes')::interval
         FROM generate_series(1, $1) g`,
      [ROWS],
    );
    await ds.query('ANALYZE');
    const repo = new DeploymentRepository(ds.manager);
    const [{ id: someId }] = await ds.query(`SELECT id FROM deployments WHERE workspace_id = $1 LIMIT 1`, [ws]);
    const page = { limit: 20, offset: 0 };

    const baseline = await time(() => repo.find(ws, someId));
    const cases: Record<string, () => Promise<unknown>> = {
      'first page': () => repo.list(ws, {}, page),
      'page at offset 5000': () => repo.list(ws, {}, { limit: 20, offset: 5000 }),
      'status=READY': () => repo.list(ws, { status: 'READY' }, page),
      'name (exact)': () => repo.list(ws, { name: 'agent-10' }, page),
      'name_contains': () => repo.list(ws, { nameContains: 'nt-99' }, page),
      'deployment_type=prod': () => repo.list(ws, { deploymentType: 'prod' }, page),
    };
    console.log(`rows=${ROWS}  baseline (primary-key lookup) median=${baseline.toFixed(2)} ms`);
    for (const [label, fn] of Object.entries(cases)) {
      const median = await time(fn);
      console.log(`${label.padEnd(24)} ${(median / baseline).toFixed(1).padStart(6)} × baseline`);
    }
    const plan: Array<{ 'QUERY PLAN': string }> = await ds.query(
      `EXPLAIN SELECT * FROM deployments WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT 20`,
      [ws],
    );
    console.log('first-page plan:', plan.map((p) => p['QUERY PLAN']).join(' | '));
  } finally {
    await ds.destroy().catch(() => {});
    await dropDatabaseIfExists(SERVER, NAME);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
