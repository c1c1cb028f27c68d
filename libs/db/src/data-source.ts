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
export function createDataSource({
  url,
  applicationName = 'slipway',
  poolSize = 10,
}: CreateDataSourceOptions): DataSource {
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

/**
 * Connects `dataSource`, waiting out a database that is not up yet (a service started beside
 * it) instead of crash-looping: every `delayMs`, at most `attempts` times, each miss a warning.
 */
export async function initializeWhenReachable(
  dataSource: DataSource,
  log: { warn: (obj: object, msg: string) => void },
  { attempts = 30, delayMs = 2_000 }: { attempts?: number; delayMs?: number } = {},
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await dataSource.initialize();
      return;
    } catch (err) {
      if (attempt >= attempts) throw err;
      log.warn({ err, attempt }, 'database not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}

/** Runs pending migrations; returns the names it applied. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const applied = await dataSource.runMigrations({ transaction: 'each' });
  return applied.map((m) => m.name);
}

/** A client of the server `url` points at, connected to its `postgres` maintenance database. */
export async function maintenanceClient(url: string): Promise<pg.Client> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  return client;
}

/**
 * Creates database `name` on the server `url` points at, unless it exists. Idempotent and safe
 * to race: a concurrent creator's "already exists" counts as success. Returns true if it made it.
 */
export async function createDatabaseIfMissing(url: string, name: string): Promise<boolean> {
  const client = await maintenanceClient(url);
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    // 42P04: created meanwhile; 23505: the same race caught by the pg_database unique index.
    if (code === '42P04' || code === '23505') return false;
    throw err;
  } finally {
    await client.end();
  }
}

/** Drops database `name` on the server `url` points at, disconnecting its sessions. Idempotent. */
export async function dropDatabaseIfExists(url: string, name: string): Promise<void> {
  const client = await maintenanceClient(url);
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** Creates the database `url` names when missing, so `pnpm start` works against a bare server. */
export async function ensureDatabase(url: string): Promise<boolean> {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  return createDatabaseIfMissing(url, name);
}
