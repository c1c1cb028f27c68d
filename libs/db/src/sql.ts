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
