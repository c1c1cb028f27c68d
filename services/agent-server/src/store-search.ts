// A store search over every namespace. The LangGraph Server API lets a client search with an empty
// `namespace_prefix` (the published server's in-memory store then searches every namespace, and a
// custom auth handler's `on("store")` filter may add the user's own label to it); the Postgres store
// refuses an empty prefix ("Namespace cannot be empty."). This runs the store's own text search
// without the prefix condition, with the store's own filter builder, so results and filters mean
// the same as for any other prefix.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';

const require = createRequire(import.meta.url);
const storeDir = path.join(
  path.dirname(require.resolve('@langchain/langgraph-checkpoint-postgres/package.json')),
  'dist',
  'store',
);
// Not in the package's exports map: loaded from its dist (the pinned version's layout).
const { QueryBuilder } = await import(pathToFileURL(path.join(storeDir, 'modules', 'query-builder.js')).href);

interface SearchOptions {
  filter?: Record<string, unknown>;
  limit?: number;
  offset?: number;
  query?: string;
}

/** The store's internals this search needs: its pool and schema, and its text search language. */
interface StoreCore {
  schema: string;
  textSearchLanguage: string;
  withClient<T>(
    fn: (client: { query: (sql: string, params: unknown[]) => Promise<{ rows: any[] }> }) => Promise<T>,
  ): Promise<T>;
}

export function searchEveryNamespace(pgStore: PostgresStore, { filter, limit = 10, offset = 0, query }: SearchOptions) {
  const core = (pgStore as unknown as { core: StoreCore }).core;
  return core.withClient(async (client) => {
    const params: unknown[] = [query || null, core.textSearchLanguage];
    let sql =
      `SELECT namespace_path, key, value, created_at, updated_at,
                      CASE WHEN $1::text IS NOT NULL THEN ts_rank(to_tsvector($2::regconfig, value::text), ` +
      `plainto_tsquery($2::regconfig, $1::text)) ELSE 0 END AS score
                 FROM "${core.schema}".store
                WHERE (expires_at IS NULL OR expires_at > CURRENT_TIMESTAMP)`;
    let next = 3;
    if (filter && Object.keys(filter).length) {
      const { conditions, newParamIndex } = QueryBuilder.buildFilterConditions(filter, params, next);
      if (conditions.length) sql += ` AND (${conditions.join(' AND ')})`;
      next = newParamIndex;
    }
    if (query) {
      sql += ` AND (to_tsvector($2::regconfig, value::text) @@ plainto_tsquery($2::regconfig, $1::text) OR value::text ILIKE $${next})`;
      params.push(`%${query}%`);
      next += 1;
    }
    sql += `${query ? ' ORDER BY score DESC, updated_at DESC' : ' ORDER BY updated_at DESC'} LIMIT $${next} OFFSET $${next + 1}`;
    params.push(limit, offset);
    const { rows } = await client.query(sql, params);
    return rows.map((row) => ({
      namespace: String(row.namespace_path).split(':'),
      key: row.key,
      value: row.value,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      ...(query ? { score: Number(row.score) } : {}),
    }));
  });
}
