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

/** A client of the server `url` points at, connected to its `postgres` maintenance database. */
async function maintenanceClient(url: string): Promise<pg.Client> {
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

/**
 * What a deployment's role may never be: it owns its database and nothing else. ALTER may not
 * name the superuser-only attributes unless run by a superuser; the role was created without them.
 */
const UNPRIVILEGED_ALTER = 'LOGIN NOCREATEDB NOCREATEROLE';
const UNPRIVILEGED = `${UNPRIVILEGED_ALTER} NOSUPERUSER NOREPLICATION NOBYPASSRLS`;

/**
 * A deployment's own database with its own login role (same name) that owns it, so the app's
 * DATABASE_URI carries no control-plane credentials. PUBLIC loses CONNECT on it, so other
 * deployments' roles cannot reach it, and on the control plane's own database (the one `url`
 * names). Idempotent: an existing role gets its password and attributes reset, an existing
 * database its owner. Needs CREATEROLE (or superuser) on the control-plane user.
 */
export async function provisionDeploymentDatabase(url: string, name: string, password: string): Promise<void> {
  const client = await maintenanceClient(url);
  const role = pg.escapeIdentifier(name);
  try {
    const { rowCount: hasRole } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
    const literal = client.escapeLiteral(password);
    await client
      .query(hasRole ? `ALTER ROLE ${role} WITH ${UNPRIVILEGED_ALTER} PASSWORD ${literal}` : `CREATE ROLE ${role} WITH ${UNPRIVILEGED} PASSWORD ${literal}`)
      .catch((err: { code?: string }) => {
        if (err.code === '42710') return client.query(`ALTER ROLE ${role} WITH ${UNPRIVILEGED_ALTER} PASSWORD ${literal}`); // created meanwhile
        if (err.code === '42501') {
          throw new Error(`The control-plane database user may not create roles; grant it CREATEROLE so each deployment gets its own (${name}).`);
        }
        throw err;
      });
    const { rowCount: hasDb } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!hasDb) {
      await client.query(`CREATE DATABASE ${role} OWNER ${role}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04' && err.code !== '23505') throw err;
      });
    }
    await client.query(`ALTER DATABASE ${role} OWNER TO ${role}`);
    await client.query(`REVOKE ALL ON DATABASE ${role} FROM PUBLIC`);
    // Only databases this installation made: its own and its deployments' (the server may host others).
    const controlPlane = decodeURIComponent(new URL(url).pathname.slice(1));
    if (controlPlane) await client.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${pg.escapeIdentifier(controlPlane)} FROM PUBLIC`);
  } finally {
    await client.end();
  }
}

/** Drops a deployment's database, then its role. Idempotent. */
export async function dropDeploymentDatabase(url: string, name: string): Promise<void> {
  await dropDatabaseIfExists(url, name);
  const client = await maintenanceClient(url);
  try {
    await client.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(name)}`);
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
