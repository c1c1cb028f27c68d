import type { QueryRunner } from 'typeorm';

/** Anything that runs a statement: a DataSource, an EntityManager or a QueryRunner. */
type Queryable = { query(sql: string): Promise<unknown> };

/** A liveness probe: resolves once Postgres answered on `db` (a pooled connection, or the runner's own). */
export async function ping(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

/**
 * Takes a session-level advisory lock (two-key form) on the runner's connection without waiting:
 * true when it is now held. It stays held until released or that connection closes, so the
 * caller keeps the runner for as long as it means to hold the lock.
 */
export async function trySessionLock(runner: QueryRunner, key: readonly [number, number]): Promise<boolean> {
  const [row] = await runner.query(`SELECT pg_try_advisory_lock($1::int, $2::int) AS locked`, [...key]);
  return Boolean(row?.locked);
}

/** Releases a session-level advisory lock that the runner's connection holds. */
export async function releaseSessionLock(runner: QueryRunner, key: readonly [number, number]): Promise<void> {
  await runner.query(`SELECT pg_advisory_unlock($1::int, $2::int)`, [...key]);
}
