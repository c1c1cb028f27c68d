import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG_HARDENING, dropDeploymentDatabase, provisionDeploymentDatabase } from '@slipway/db';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * A deployment's database role on the real Postgres server: its CONNECTION LIMIT holds, and
 * inside its database the catalog lists neither the server's other databases nor its roles,
 * while the role still uses its own database like an app does. Both ways the hardening gets
 * there: applied by a superuser control-plane user, and cloned from a hardened template by a
 * control-plane role with only CREATEDB and CREATEROLE. Every database and role made here is
 * this file's (random names) and dropped at the end.
 */

const suffix = randomBytes(4).toString('hex');
const name = (label: string) => `slw_t_${label}_${suffix}`;

let controlPlane: TestDatabase;
let admin: pg.Client;
const made = { databases: [] as string[], roles: [] as string[] };

/** A client of database `database` as `user` (the server trusts local connections: the password is not checked here). */
async function connectAs(user: string, database: string): Promise<pg.Client> {
  const url = new URL(controlPlane.url);
  url.username = user;
  url.password = 'unused';
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  return client;
}

const sqlState = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (err: { code?: string }) => err.code ?? String(err),
  );

beforeAll(async () => {
  controlPlane = await createTestDatabase();
  admin = new pg.Client({ connectionString: controlPlane.url });
  await admin.connect();
});

afterAll(async () => {
  for (const db of made.databases)
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(db)} WITH IS_TEMPLATE false`).catch(() => undefined);
  for (const db of made.databases) await dropDeploymentDatabase(controlPlane.url, db).catch(() => undefined);
  for (const db of made.databases)
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(db)} WITH (FORCE)`).catch(() => undefined);
  for (const role of made.roles)
    await admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`).catch(() => undefined);
  await admin?.end();
  await controlPlane?.drop();
});

/** What a deployment role inside its own database gets when it tries to list the server. */
async function listingAttempts(client: pg.Client): Promise<Record<string, string>> {
  return {
    pg_database: await sqlState(client.query('SELECT datname FROM pg_database')),
    pg_roles: await sqlState(client.query('SELECT rolname FROM pg_roles')),
    pg_user: await sqlState(client.query('SELECT usename FROM pg_user')),
    pg_auth_members: await sqlState(client.query('SELECT roleid FROM pg_auth_members')),
    pg_stat_activity: await sqlState(client.query('SELECT datname, usename FROM pg_stat_activity')),
    pg_stat_database: await sqlState(client.query('SELECT datname FROM pg_stat_database')),
    pg_get_userbyid: await sqlState(client.query('SELECT pg_get_userbyid(10)')),
    pg_describe_object: await sqlState(client.query(`SELECT pg_describe_object('pg_database'::regclass, 1, 0)`)),
  };
}

const ALL_DENIED = {
  pg_database: '42501',
  pg_roles: '42501',
  pg_user: '42501',
  pg_auth_members: '42501',
  pg_stat_activity: '42501',
  pg_stat_database: '42501',
  pg_get_userbyid: '42501',
  pg_describe_object: '42501',
};

/** As role `db` in database `db`: every listing is denied, and the database works like an app's. */
async function expectHiddenAndUsable(db: string): Promise<void> {
  const client = await connectAs(db, db);
  try {
    expect(await listingAttempts(client)).toEqual(ALL_DENIED);
    await ownDatabaseWorks(client, db);
  } finally {
    await client.end();
  }
}

/** The role uses its own database like an app: tables, rows, an advisory lock, its own name. */
async function ownDatabaseWorks(client: pg.Client, role: string): Promise<void> {
  await client.query('CREATE TABLE threads (id text PRIMARY KEY, data jsonb)');
  await client.query(`INSERT INTO threads VALUES ('t1', '{"a":1}')`);
  expect((await client.query('SELECT data FROM threads')).rows).toEqual([{ data: { a: 1 } }]);
  expect((await client.query('SELECT pg_advisory_lock(1), current_user AS who')).rows[0].who).toBe(role);
  expect(
    (await client.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'threads'`))
      .rows[0].n,
  ).toBe(1);
}

describe('a deployment database provisioned by a superuser control-plane user', () => {
  const db = name('su');

  it('hides the server’s databases and roles from the deployment role, which still uses its own database', async () => {
    made.databases.push(db);
    const result = await provisionDeploymentDatabase(controlPlane.url, db, 'pw-unused-here', { connectionLimit: 3 });
    expect(result).toEqual({ catalogHidden: true });
    await expectHiddenAndUsable(db);
    // The revocations live in that database only: the control plane's catalog is as it was.
    const [acl] = (
      await admin.query(`SELECT relacl::text AS acl FROM pg_class WHERE oid = 'pg_catalog.pg_database'::regclass`)
    ).rows;
    expect(acl.acl).toContain('=r/');
  });

  it('holds the role to its CONNECTION LIMIT: one session more is refused (53300)', async () => {
    // Its own database: the case stands without the one above.
    const db = name('limit');
    made.databases.push(db);
    await provisionDeploymentDatabase(controlPlane.url, db, 'pw-unused-here', { connectionLimit: 3 });
    const [row] = (await admin.query('SELECT rolconnlimit FROM pg_roles WHERE rolname = $1', [db])).rows;
    expect(row.rolconnlimit).toBe(3);
    const sessions = [await connectAs(db, db), await connectAs(db, db), await connectAs(db, db)];
    try {
      expect(await sqlState(connectAs(db, db).then((c) => c.end()))).toBe('53300');
    } finally {
      for (const s of sessions) await s.end();
    }
    // Re-provisioning resets the limit to the configured one.
    await provisionDeploymentDatabase(controlPlane.url, db, 'pw-unused-here', { connectionLimit: 7 });
    expect((await admin.query('SELECT rolconnlimit FROM pg_roles WHERE rolname = $1', [db])).rows[0].rolconnlimit).toBe(
      7,
    );
  });
});

describe('deployment databases provisioned at once', () => {
  // Every provisioning revokes on the control plane's own database: sessions doing so together
  // race on one catalog row, which Postgres answers "tuple concurrently updated" (XX000).
  it('all succeed, however their catalog changes interleave', async () => {
    const dbs = Array.from({ length: 6 }, (_, i) => name(`many${i}`));
    made.databases.push(...dbs);
    const results = await Promise.allSettled(
      [...dbs, ...dbs].map((db) =>
        provisionDeploymentDatabase(controlPlane.url, db, 'pw-unused-here', { connectionLimit: 2 }),
      ),
    );
    expect(results.map((r) => (r.status === 'fulfilled' ? 'ok' : String(r.reason)))).toEqual(
      Array(dbs.length * 2).fill('ok'),
    );
    for (const db of dbs) await expectHiddenAndUsable(db);
  });
});

describe('a deployment database provisioned by a control-plane role with only CREATEDB and CREATEROLE', () => {
  const cp = name('cp');
  const cpDb = name('cpdb');
  const template = name('tpl');

  beforeAll(async () => {
    made.roles.push(cp);
    await admin.query(`CREATE ROLE ${cp} LOGIN NOSUPERUSER CREATEDB CREATEROLE`);
    made.databases.push(cpDb, template);
    await admin.query(`CREATE DATABASE ${cpDb} OWNER ${cp}`);
    // What docker-compose's Postgres init does once, as the superuser: a hardened template.
    await admin.query(`CREATE DATABASE ${template}`);
    const url = new URL(controlPlane.url);
    url.pathname = `/${template}`;
    const inTemplate = new pg.Client({ connectionString: url.toString() });
    await inTemplate.connect();
    try {
      for (const statement of CATALOG_HARDENING) await inTemplate.query(statement);
    } finally {
      await inTemplate.end();
    }
    await admin.query(`ALTER DATABASE ${template} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  });

  const cpUrl = () => {
    const url = new URL(controlPlane.url);
    url.username = cp;
    url.password = 'unused';
    url.pathname = `/${cpDb}`;
    return url.toString();
  };

  it('clones the hardened template: the catalog is hidden the same way', async () => {
    const db = name('tp');
    made.databases.push(db);
    made.roles.push(db);
    expect(await provisionDeploymentDatabase(cpUrl(), db, 'pw', { connectionLimit: 2, template })).toEqual({
      catalogHidden: true,
    });
    const [owner] = (
      await admin.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', [db])
    ).rows;
    expect(owner.owner).toBe(db);
    await expectHiddenAndUsable(db);
  });

  it('without the template it still provisions, and says the catalog is not hidden', async () => {
    const db = name('nt');
    made.databases.push(db);
    made.roles.push(db);
    expect(
      await provisionDeploymentDatabase(cpUrl(), db, 'pw', { connectionLimit: 2, template: name('missing') }),
    ).toEqual({ catalogHidden: false });
    const client = await connectAs(db, db);
    try {
      expect(await sqlState(client.query('SELECT datname FROM pg_database'))).toBe('ok');
    } finally {
      await client.end();
    }
  });
});
