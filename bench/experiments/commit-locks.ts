/**
 * Experiment (bench/history.md, "What bounds a create at commit"): the commit-time locks of a
 * create in Postgres alone, no api. 10 clients each commit, in a loop, what a create's locks are
 * about: one event (numbered at commit by the deferred trigger under the per-workspace lock, and
 * announced) and one outbox row with its notify. Variants interleaved in rounds: one workspace
 * vs 10, notifies off, the numbering lock off, both off.
 *
 *   tsx bench/experiments/commit-locks.ts [seconds per leg] [rounds]
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createDatabaseIfMissing, createDataSource, dropDatabaseIfExists, runMigrations } from '@slipway/db';
import { databaseUrl, SERVER } from '../support/stack.js';
import { installSwitches } from './switches.js';

const seconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 3);
const CLIENTS = 10;
const db = `slipway_commit_locks_${process.pid}`;
await createDatabaseIfMissing(SERVER, db);
const ds = createDataSource({ url: databaseUrl(db), poolSize: 2 });
await ds.initialize();
try {
  await runMigrations(ds);
  const switches = await installSwitches(ds, db);
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const c = new pg.Client({ connectionString: databaseUrl(db) });
      await c.connect();
      return c;
    }),
  );
  const workspaces = Array.from({ length: CLIENTS }, () => randomUUID());
  const leg = async (many: boolean) => {
    let commits = 0;
    const end = Date.now() + seconds * 1000;
    await Promise.all(
      clients.map(async (c, i) => {
        const ws = many ? workspaces[i]! : workspaces[0]!;
        while (Date.now() < end) {
          await c.query('BEGIN');
          await c.query(`INSERT INTO events (workspace_id, type) VALUES ($1, 'bench')`, [ws]);
          await c.query(
            `WITH row AS (INSERT INTO outbox (queue, job_name, job_id, payload, delay_ms, sent_at) VALUES ('q', ` +
              `'j', $1, '{}', 0, now()) RETURNING id)
             SELECT pg_notify('slipway_outbox', '') FROM row`,
            [randomUUID()],
          );
          await c.query('COMMIT');
          commits++;
        }
      }),
    );
    return commits / seconds;
  };
  const legs: Array<[string, boolean, boolean, boolean]> = [
    ['one workspace', false, true, true],
    ['10 workspaces', true, true, true],
    ['one, no notifies', false, false, true],
    ['10, no notifies', true, false, true],
    ['one, no lock', false, true, false],
    ['one, neither', false, false, false],
  ];
  const results = new Map<string, number[]>();
  for (let r = 0; r < rounds; r++) {
    for (const [name, many, notify, lock] of legs) {
      await switches.notify(notify);
      await switches.numberingLock(lock);
      const rate = await leg(many);
      results.set(name, [...(results.get(name) ?? []), rate]);
      console.log(`round ${r + 1} ${name.padEnd(18)} ${rate.toFixed(0)} commits/s`);
    }
  }
  console.log('\nmedians');
  for (const [name, xs] of results)
    console.log(`${name.padEnd(18)} ${[...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(0)} commits/s`);
  await Promise.all(clients.map((c) => c.end()));
} finally {
  await ds.destroy();
  await dropDatabaseIfExists(SERVER, db);
}
