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
  (err as { code?: string })?.code === '23505' && (constraint == null || (err as { constraint?: string }).constraint === constraint);
