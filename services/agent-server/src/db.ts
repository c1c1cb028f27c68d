// The host's connection pool to the deployment database and its one transaction helper.
import pg from 'pg';

export type Db = pg.Pool;
export type Tx = pg.PoolClient;

export function createPool(connectionString: string, max = 6): Db {
  const pool = new pg.Pool({ connectionString, max });
  // An idle client's error (the database restarting) must not end the process; the next query reconnects.
  pool.on('error', (err) => console.error('agent server: idle database connection failed:', err.message));
  return pool;
}

/** Where `connectionString` points, without its credentials: host:port/database. */
export function databaseAddress(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'DATABASE_URI';
  }
}

/**
 * The start's first connection. Until it is made, a line every `everyMs` says the start is
 * waiting for the database and where it is, so one that cannot be reached (down, or packets
 * dropped) shows in the instance's log instead of as a start that never answers.
 */
export async function firstConnection(pool: Db, where: string, everyMs = 5_000): Promise<Tx> {
  const since = Date.now();
  const waiting = setInterval(() => {
    console.log(
      `agent server: still waiting for the deployment database at ${where} (${Math.round((Date.now() - since) / 1000)} s)`,
    );
  }, everyMs);
  try {
    return await pool.connect();
  } finally {
    clearInterval(waiting);
  }
}

/** Runs `fn` in a transaction on one client of `pool`. */
export async function inTransaction<T>(pool: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** A unique violation (23505), optionally of the named constraint or index. */
export const isUniqueViolation = (err: unknown, constraint?: string): boolean =>
  (err as { code?: string })?.code === '23505' &&
  (constraint == null || (err as { constraint?: string }).constraint === constraint);
