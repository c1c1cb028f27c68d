import type { EntityManager } from 'typeorm';

/**
 * Runs raw SQL and returns its rows. TypeORM's postgres driver answers UPDATE/DELETE … RETURNING
 * with `[rows, rowCount]` but SELECT with `rows`; this hides the difference.
 */
export async function queryRows<T = Record<string, any>>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await manager.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as T[];
  }
  return result as T[];
}

/**
 * Work that rides on another statement as data-modifying CTEs, so both cost one round trip, and
 * the one value it reads back. `ctes` is a CTE list (`name AS (…), …`) whose parameters are
 * numbered from `$${offset + 1}`; `value` is a scalar expression over those CTEs, which the
 * carrying statement returns as its column `rider`. A CTE runs whether or not it is read.
 */
export interface Rider<T> {
  sql(offset: number): { ctes: string; value: string; params: unknown[] };
  read(value: unknown): T;
}

/** A rider on its own: its CTEs, then a SELECT of its value. */
export async function runRider<T>(manager: EntityManager, rider: Rider<T>): Promise<T> {
  const { ctes, value, params } = rider.sql(0);
  const [row] = await queryRows<{ rider: unknown }>(manager, `WITH ${ctes} SELECT ${value} AS rider`, params);
  return rider.read(row?.rider);
}
