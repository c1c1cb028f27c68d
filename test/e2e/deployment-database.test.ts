import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { DeploymentCredentialStore } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A cloud-hosted deployment's own database (issue 3, item 10): AWAITING_DATABASE until the deployer has created it,
 * with a login role of its own that owns it, on the control plane's Postgres server, then READY; database and role
 * dropped when the deployment is deleted. Uses an `upload` deployment: it needs no repository or integration, and has
 * no revision until a tarball arrives, so only provisioning runs.
 */
let api: TestApi;
let deployer: ServiceProcess;

beforeAll(async () => {
  api = await startTestApi();
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api, { SLIPWAY_DEPLOYMENT_DB_CONNECTION_LIMIT: '7' }));
}, 60_000);

afterAll(async () => {
  await deployer?.stop();
  await api?.close();
});

const databaseExists = async (name: string) =>
  (await api.dataSource.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name])).length === 1;

describe('deployment databases', () => {
  it('provisions the database (AWAITING_DATABASE → READY) and drops it on delete', async () => {
    const res = await api.http.post('/v2/deployments', {
      name: 'db-owner',
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.status).toBe('AWAITING_DATABASE');
    expect(res.body.latest_revision_id).toBeNull();
    const name = deploymentDatabaseName('db-owner', res.body.id);

    const ready = await eventually(
      async () => (await api.http.get(`/v2/deployments/${res.body.id}`)).body,
      (d) => d.status === 'READY',
    ).catch((err) => {
      throw new Error(`${err.message}\ndeployer output:\n${deployer.output()}`);
    });
    expect(ready.status).toBe('READY');
    expect(await databaseExists(name)).toBe(true);
    const [row] = await api.dataSource.query(`SELECT database_name FROM deployments WHERE id = $1`, [res.body.id]);
    expect(row.database_name).toBe(name);
    expect(name.length).toBeLessThanOrEqual(63);

    // Its own login role owns it; that role can use its database and read nothing of the control plane's.
    const [owner] = await api.dataSource.query(
      `SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1`,
      [name],
    );
    expect(owner.owner).toBe(name);
    const box = secretsCodec(api.config);
    const { databasePassword } = await new DeploymentCredentialStore(api.dataSource.manager, box).credentials(
      res.body.id,
    );
    const as = (database: string) => {
      const u = new URL(api.database.url);
      u.username = name;
      u.password = databasePassword;
      u.pathname = `/${database}`;
      return new pg.Client({ connectionString: u.toString() });
    };
    const own = as(name);
    await own.connect();
    await own.query('CREATE TABLE notes (id int)');
    // The deployer hid the server's catalog from it (docs/operations.md, Deployment databases).
    await expect(own.query('SELECT datname FROM pg_database')).rejects.toThrow(/permission denied/);
    await expect(own.query('SELECT rolname FROM pg_roles')).rejects.toThrow(/permission denied/);
    await own.end();
    // Not even a connection to the control plane's database (PUBLIC lost CONNECT on it).
    await expect(as(api.database.name).connect()).rejects.toThrow(/permission denied|CONNECT privilege/);
    const [role] = await api.dataSource.query(
      `SELECT rolsuper, rolcreatedb, rolcreaterole, rolconnlimit FROM pg_roles WHERE rolname = $1`,
      [name],
    );
    expect(role).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolconnlimit: 7 });

    expect((await api.http.delete(`/v2/deployments/${res.body.id}`)).status).toBe(204);
    await eventually(
      async () => (await api.http.get(`/v2/deployments/${res.body.id}`)).status,
      (s) => s === 404,
    );
    expect(await databaseExists(name)).toBe(false);
    expect(await api.dataSource.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [name])).toEqual([]);
    // The tracing project outlives the deployment, and the name is free again.
    const again = await api.http.post('/v2/deployments', {
      name: 'db-owner',
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
    });
    expect(again.status).toBe(201);
    expect(again.body.tracing_project_id).toBe(res.body.tracing_project_id);
  }, 60_000);

  it('keeps derived database names within Postgres limits for the longest names', () => {
    const longest = `a${'b'.repeat(61)}c`;
    expect(longest).toHaveLength(63);
    const name = deploymentDatabaseName(longest, '6f1c7e2a-0000-4000-8000-000000000000');
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
    expect(name).not.toBe(deploymentDatabaseName(longest, '6f1c7e2a-0000-4000-8000-000000000001'));
  });
});
