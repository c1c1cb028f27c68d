import { DataSource, type DataSourceOptions } from 'typeorm';
import pg from 'pg';
import { ENTITIES } from './entities/index.js';
import { MIGRATIONS } from './migrations/index.js';
import { SnakeNamingStrategy } from './naming-strategy.js';

export interface CreateDataSourceOptions {
  url: string;
  /** Shown in pg_stat_activity, so an operator can tell api from builder connections. */
  applicationName?: string;
  poolSize?: number;
}

/** A DataSource over our entities and migrations. Schema changes only ever go through migrations. */
export function createDataSource({ url, applicationName = 'slipway', poolSize = 10 }: CreateDataSourceOptions): DataSource {
  const options: DataSourceOptions = {
    type: 'postgres',
    url,
    applicationName,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    namingStrategy: new SnakeNamingStrategy(),
    synchronize: false,
    migrationsRun: false,
    logging: false,
    extra: {
      max: poolSize,
      // Fail fast when Postgres is down instead of hanging the request until the client gives up.
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
    },
  };
  return new DataSource(options);
}

/** Runs pending migrations; returns the names it applied. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const applied = await dataSource.runMigrations({ transaction: 'each' });
  return applied.map((m) => m.name);
}

/**
 * Creates the database named in `url` when it does not exist yet (connecting to the `postgres`
 * maintenance database). Lets `pnpm start` work against a bare local server.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    return true;
  } catch (err) {
    // Another process created it between our check and our CREATE.
    if ((err as { code?: string }).code === '42P04') return false;
    throw err;
  } finally {
    await client.end();
  }
}
