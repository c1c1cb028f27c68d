import pg from 'pg';
import { dropDatabaseIfExists, maintenanceClient } from './data-source.js';

/**
 * What a deployment's role may never be: it owns its database and nothing else. ALTER may not
 * name the superuser-only attributes unless run by a superuser; the role was created without them.
 */
const UNPRIVILEGED_ALTER = 'LOGIN NOCREATEDB NOCREATEROLE';
const UNPRIVILEGED = `${UNPRIVILEGED_ALTER} NOSUPERUSER NOREPLICATION NOBYPASSRLS`;

/**
 * The template a deployment database is cloned from when it exists (datistemplate): prepared
 * once by a superuser with CATALOG_HARDENING applied (docker-compose's Postgres init does), so
 * a control-plane role that is not a superuser still makes databases whose catalog hides the
 * server's other databases and roles.
 */
export const DEPLOYMENT_TEMPLATE_DATABASE = 'slipway_deployment_template';

/**
 * Catalog views and functions that list (or name, given an OID) the server's databases and
 * roles, taken from PUBLIC inside a deployment database. Privileges on the shared catalogs
 * (pg_database, pg_authid) are kept per database, so this changes nothing in the control
 * plane's own database or any other. Run by a superuser (the catalog's owner).
 */
export const CATALOG_HARDENING: readonly string[] = [
  `REVOKE SELECT ON pg_catalog.pg_database, pg_catalog.pg_roles, pg_catalog.pg_user, pg_catalog.pg_group, pg_catalog.pg_auth_members,
     pg_catalog.pg_db_role_setting, pg_catalog.pg_shdescription, pg_catalog.pg_stat_activity, pg_catalog.pg_stat_database,
     pg_catalog.pg_stat_database_conflicts FROM PUBLIC`,
  `REVOKE EXECUTE ON FUNCTION pg_catalog.pg_get_userbyid(oid), pg_catalog.pg_stat_get_activity(integer),
     pg_catalog.pg_describe_object(oid, oid, integer), pg_catalog.pg_identify_object(oid, oid, integer),
     pg_catalog.pg_identify_object_as_address(oid, oid, integer) FROM PUBLIC`,
];

export interface DeploymentDatabaseOptions {
  /** The role's CONNECTION LIMIT: sessions it may hold at once (SLIPWAY_DEPLOYMENT_DB_CONNECTION_LIMIT). */
  connectionLimit: number;
  /** The hardened template's name; DEPLOYMENT_TEMPLATE_DATABASE unless a test brings its own. */
  template?: string;
}

/** What provisioning could do about the catalog: hidden (hardened here, or cloned from the hardened template) or not. */
export interface ProvisionedDatabase {
  catalogHidden: boolean;
}

/**
 * A deployment's own database with its own login role (same name) that owns it, so the app's
 * DATABASE_URI carries no control-plane credentials. The role may hold at most
 * `connectionLimit` sessions. PUBLIC loses CONNECT on it, so other deployments' roles cannot
 * reach it, and on the control plane's own database (the one `url` names). Inside it, the
 * catalog no longer lists the server's databases and roles (CATALOG_HARDENING): applied here
 * when the control-plane user is a superuser, else inherited from DEPLOYMENT_TEMPLATE_DATABASE.
 * Idempotent: an existing role gets its password, attributes and limit reset, an existing
 * database its owner. Needs CREATEDB and CREATEROLE (or superuser) on the control-plane user.
 */
export async function provisionDeploymentDatabase(
  url: string,
  name: string,
  password: string,
  options: DeploymentDatabaseOptions,
): Promise<ProvisionedDatabase> {
  const client = await maintenanceClient(url);
  const role = pg.escapeIdentifier(name);
  let superuser = false;
  let hasTemplate = false;
  const templateName = options.template ?? DEPLOYMENT_TEMPLATE_DATABASE;
  try {
    superuser =
      (await client.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user')).rows[0]
        ?.rolsuper === true;
    const { rowCount: hasRole } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
    const limit = `CONNECTION LIMIT ${Math.trunc(options.connectionLimit)}`;
    const literal = client.escapeLiteral(password);
    const alter = `ALTER ROLE ${role} WITH ${UNPRIVILEGED_ALTER} ${limit} PASSWORD ${literal}`;
    await (hasRole
      ? catalogChange(client, alter)
      : client.query(`CREATE ROLE ${role} WITH ${UNPRIVILEGED} ${limit} PASSWORD ${literal}`)
    ).catch((err: { code?: string }) => {
      // Created meanwhile: 42710, or 23505 when the other CREATE ROLE had not committed yet.
      if (err.code === '42710' || err.code === '23505') return catalogChange(client, alter);
      if (err.code === '42501') {
        throw new Error(
          `The control-plane database user may not create roles; grant it CREATEROLE so each deployment gets its own (${name}).`,
        );
      }
      throw err;
    });
    // PostgreSQL 15: only a member of a role may make it a database's owner (a superuser is all roles).
    if (!superuser) await catalogChange(client, `GRANT ${role} TO CURRENT_USER`);
    hasTemplate = !!(
      await client.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [templateName])
    ).rowCount;
    const { rowCount: hasDb } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!hasDb) {
      const template = hasTemplate ? ` TEMPLATE ${pg.escapeIdentifier(templateName)}` : '';
      await client.query(`CREATE DATABASE ${role} OWNER ${role}${template}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04' && err.code !== '23505') throw err;
      });
    }
    await catalogChange(client, `ALTER DATABASE ${role} OWNER TO ${role}`);
    await catalogChange(client, `REVOKE ALL ON DATABASE ${role} FROM PUBLIC`);
    // Only databases this installation made: its own and its deployments' (the server may host others).
    const controlPlane = decodeURIComponent(new URL(url).pathname.slice(1));
    if (controlPlane)
      await catalogChange(
        client,
        `REVOKE CONNECT, TEMPORARY ON DATABASE ${pg.escapeIdentifier(controlPlane)} FROM PUBLIC`,
      );
  } finally {
    await client.end();
  }
  if (superuser) await hardenCatalog(url, name);
  // A database made before the template existed was cloned from template1: only a superuser can tell (and fix) it.
  return { catalogHidden: superuser || hasTemplate };
}

/** Applies CATALOG_HARDENING inside database `name` (as the superuser `url` names). */
async function hardenCatalog(url: string, name: string): Promise<void> {
  const target = new URL(url);
  target.pathname = `/${encodeURIComponent(name)}`;
  const client = new pg.Client({ connectionString: target.toString() });
  await client.connect();
  try {
    for (const statement of CATALOG_HARDENING) await catalogChange(client, statement);
  } finally {
    await client.end();
  }
}

/**
 * Runs a GRANT, REVOKE or ALTER of a catalog row, again when it lost a race: two sessions
 * changing the same row at once (every deployer provisioning at the same time revokes on the
 * control plane's database; hardening templates share pg_class rows) make the later one fail
 * with "tuple concurrently updated" (XX000) instead of waiting. The statements are idempotent.
 */
async function catalogChange(client: pg.ClientBase, sql: string, attempts = 6): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query(sql);
      return;
    } catch (err) {
      if (attempt >= attempts || !isConcurrentCatalogUpdate(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.random() * 40));
    }
  }
}

function isConcurrentCatalogUpdate(err: unknown): boolean {
  const { code, message } = err as { code?: string; message?: string };
  return code === 'XX000' && /tuple concurrently (updated|deleted)/.test(message ?? '');
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

/** How a database copy went: how long it took and how many bytes the dump was. */
export interface DatabaseCopy {
  ms: number;
  bytes: number;
}

/**
 * Copies deployment database `from` into `to` (a preview's `database: "copy"`, docs/api.md,
 * Previews): `pg_dump --format=custom` piped into `pg_restore --clean --if-exists --no-owner
 * --no-acl --role=<to>`, so every object the copy makes belongs to `to`'s role and a retry
 * replaces a partial copy. pg_dump reads one snapshot under ACCESS SHARE locks: the source keeps
 * taking reads and writes throughout (only DDL on it waits). The control-plane user connects as a
 * member of both roles; credentials go through the environment, never the command line.
 */
export async function copyDeploymentDatabase(url: string, from: string, to: string): Promise<DatabaseCopy> {
  const { spawn } = await import('node:child_process');
  const u = new URL(url);
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    PGHOST: decodeURIComponent(u.hostname),
    PGPORT: u.port || '5432',
    PGUSER: decodeURIComponent(u.username),
    PGPASSWORD: decodeURIComponent(u.password),
    PGSSLMODE: u.searchParams.get('sslmode') ?? 'prefer',
    PGCONNECT_TIMEOUT: '10',
  };
  const started = performance.now();
  const dump = spawn('pg_dump', ['--format=custom', '--no-owner', '--no-acl', `--dbname=${from}`], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const restore = spawn(
    'pg_restore',
    ['--clean', '--if-exists', '--no-owner', '--no-acl', '--exit-on-error', `--role=${to}`, `--dbname=${to}`],
    { env, stdio: ['pipe', 'ignore', 'pipe'] },
  );
  let bytes = 0;
  dump.stdout.on('data', (c: Buffer) => (bytes += c.length));
  dump.stdout.pipe(restore.stdin);
  const errors = { dump: '', restore: '' };
  dump.stderr.on('data', (c: Buffer) => (errors.dump = (errors.dump + c.toString()).slice(-2000)));
  restore.stderr.on('data', (c: Buffer) => (errors.restore = (errors.restore + c.toString()).slice(-2000)));
  const exited = (child: ReturnType<typeof spawn>) =>
    new Promise<number | null>((resolve) => {
      child.once('error', () => resolve(-1));
      child.once('close', (code) => resolve(code));
    });
  const [dumped, restored] = await Promise.all([exited(dump), exited(restore)]);
  if (dumped !== 0)
    throw new Error(
      `pg_dump of ${from} failed (${dumped === -1 ? 'pg_dump is not installed' : `exit ${dumped}`}): ${errors.dump.trim()}`,
    );
  if (restored !== 0)
    throw new Error(
      `pg_restore into ${to} failed (${restored === -1 ? 'pg_restore is not installed' : `exit ${restored}`}): ${errors.restore.trim()}`,
    );
  return { ms: Math.round(performance.now() - started), bytes };
}

/**
 * After a copy (a preview's `database: "copy"`): the agent server's crons copied from the parent
 * are paused (`enabled = false`), so a preview never fires the parent's schedules on its own; a
 * user resumes one with a PATCH of the cron. Nothing happens in a database without crons.
 * Returns how many were paused.
 */
export async function pauseCopiedCrons(url: string, database: string): Promise<number> {
  const target = new URL(url);
  target.pathname = `/${encodeURIComponent(database)}`;
  const client = new pg.Client({ connectionString: target.toString() });
  await client.connect();
  try {
    const { rows } = await client.query<{ crons: string | null }>(
      `SELECT to_regclass('slipway_agent_crons')::text AS crons`,
    );
    if (!rows[0]?.crons) return 0;
    return (
      (await client.query(`UPDATE slipway_agent_crons SET enabled = false, updated_at = now() WHERE enabled`))
        .rowCount ?? 0
    );
  } finally {
    await client.end();
  }
}
