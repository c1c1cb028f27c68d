import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDataSource, dropDeploymentDatabase, provisionDeploymentDatabase, runMigrations } from '@slipway/db';
import { freePort } from '../support/ports.js';

/**
 * docker-compose's Postgres init script (infra/postgres/init-slipway.sh) run for real, as the
 * postgres image runs it: on a fresh cluster of this file's own (initdb in a temporary
 * directory, 127.0.0.1 on a free port, password authentication), as the superuser. Then the
 * control plane's role it made — not a superuser — provisions a deployment database: cloned
 * from the hardened template, whose role sees neither the other databases nor the roles.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The newest installed server's binaries (Debian: /usr/lib/postgresql/<major>/bin). */
const majors = existsSync('/usr/lib/postgresql')
  ? readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a))
  : [];
const BIN = `/usr/lib/postgresql/${majors[0] ?? 'none'}/bin`;
const usable = process.getuid?.() === 0 && existsSync(`${BIN}/initdb`);

const SUPERUSER_PASSWORD = 'init-test-superuser-pw';
const DB_PASSWORD = 'init-test-control-plane-pw';

let dir: string;
let port: number;
const asPostgres = (cmd: string, args: string[], env: Record<string, string> = {}) =>
  execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
const url = (user: string, password: string, database: string) =>
  `postgres://${user}:${password}@127.0.0.1:${port}/${database}`;

beforeAll(async () => {
  if (!usable) return;
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-pginit-'));
  chownSync(
    dir,
    Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
    Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
  );
  port = await freePort();
  const pwfile = path.join(dir, 'pw');
  asPostgres('sh', ['-c', `printf '%s' "$PW" > ${pwfile}`], { PW: SUPERUSER_PASSWORD });
  asPostgres(`${BIN}/initdb`, ['-D', `${dir}/data`, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`]);
  asPostgres(`${BIN}/pg_ctl`, [
    '-D',
    `${dir}/data`,
    '-w',
    '-l',
    `${dir}/log`,
    '-o',
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir}`,
    'start',
  ]);
  // As the postgres image does: the script, as the superuser, with the image's variables.
  asPostgres('sh', [path.join(ROOT, 'infra/postgres/init-slipway.sh')], {
    POSTGRES_USER: 'postgres',
    SLIPWAY_DB_PASSWORD: DB_PASSWORD,
    PGHOST: '127.0.0.1',
    PGPORT: String(port),
    PGPASSWORD: SUPERUSER_PASSWORD,
  });
}, 60_000);

afterAll(() => {
  if (!dir) return;
  try {
    asPostgres(`${BIN}/pg_ctl`, ['-D', `${dir}/data`, '-m', 'immediate', 'stop']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

async function query(connection: string, sql: string): Promise<any[]> {
  const client = new pg.Client({ connectionString: connection });
  await client.connect();
  try {
    const result: pg.QueryResult | pg.QueryResult[] = await client.query(sql);
    return (Array.isArray(result) ? result.at(-1)! : result).rows; // several statements: the last one's
  } finally {
    await client.end();
  }
}

describe.skipIf(!usable)('infra/postgres/init-slipway.sh', () => {
  it('makes the control plane role with CREATEDB and CREATEROLE only, its database, and the template', async () => {
    const [role] = await query(
      url('slipway', DB_PASSWORD, 'slipway'),
      `SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user`,
    );
    expect(role).toEqual({
      rolsuper: false,
      rolcreatedb: true,
      rolcreaterole: true,
      rolreplication: false,
      rolbypassrls: false,
    });
    const [template] = await query(
      url('slipway', DB_PASSWORD, 'slipway'),
      `SELECT datistemplate, datallowconn FROM pg_database WHERE datname = 'slipway_deployment_template'`,
    );
    expect(template).toEqual({ datistemplate: true, datallowconn: false });
    await expect(query(url('slipway', 'wrong-password', 'slipway'), 'SELECT 1')).rejects.toThrow(
      /password authentication failed/,
    );
  });

  it('lets that role run every migration and provision a deployment database whose role lists nothing', async () => {
    const dataSource = createDataSource({ url: url('slipway', DB_PASSWORD, 'slipway'), poolSize: 1 });
    await dataSource.initialize();
    try {
      expect((await runMigrations(dataSource)).length).toBeGreaterThan(10);
    } finally {
      await dataSource.destroy();
    }
    const result = await provisionDeploymentDatabase(
      url('slipway', DB_PASSWORD, 'slipway'),
      'slw_init_dep',
      'dep-password-1',
      { connectionLimit: 5 },
    );
    expect(result).toEqual({ catalogHidden: true });
    const own = url('slw_init_dep', 'dep-password-1', 'slw_init_dep');
    for (const sql of [
      'SELECT datname FROM pg_database',
      'SELECT rolname FROM pg_roles',
      'SELECT pg_get_userbyid(10)',
    ]) {
      await expect(query(own, sql), sql).rejects.toThrow(/permission denied/);
    }
    expect(await query(own, 'CREATE TABLE t (x int); INSERT INTO t VALUES (1); SELECT x FROM t')).toEqual([{ x: 1 }]);
    await expect(query(url('slw_init_dep', 'dep-password-1', 'slipway'), 'SELECT 1')).rejects.toThrow(
      /permission denied for database/,
    );
  });

  it('lets that role drop a deployment database and its role again, sessions and all', async () => {
    await provisionDeploymentDatabase(url('slipway', DB_PASSWORD, 'slipway'), 'slw_init_gone', 'dep-password-2', {
      connectionLimit: 5,
    });
    const session = new pg.Client({ connectionString: url('slw_init_gone', 'dep-password-2', 'slw_init_gone') });
    await session.connect();
    session.on('error', () => undefined); // terminated by the drop
    await dropDeploymentDatabase(url('slipway', DB_PASSWORD, 'slipway'), 'slw_init_gone');
    await session.end().catch(() => undefined);
    const control = url('slipway', DB_PASSWORD, 'slipway');
    expect(
      await query(
        control,
        `SELECT datname FROM pg_database WHERE datname = 'slw_init_gone' UNION ALL SELECT rolname FROM pg_roles ` +
          `WHERE rolname = 'slw_init_gone'`,
      ),
    ).toEqual([]);
  });
});
