import { execFileSync } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonServer, nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { eventually } from '../support/service-process.js';

/**
 * A preview end to end (docs/api.md, Previews): the real api, builder and deployer build a pull
 * request's branch from a local git repository into a deployment of its own, which serves the
 * branch's code at its own URL with a database of its own, while the parent keeps serving its
 * branch; closing the preview removes it, its database and its credentials.
 */
const APP = 'previewed-app';

let stand: CodeDeployStand;

beforeAll(async () => {
  stand = await startCodeDeployStand();
}, 120_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

const files = (branch: string) =>
  nodeApp(
    APP,
    jsonServer({ branch: JSON.stringify(branch), database: 'new URL(process.env.DATABASE_URI).pathname.slice(1)' }),
    { graphConfig: false },
  );

/** A statement in one of the server's databases, as the control plane's own (superuser) user of this test server. */
async function query(database: string, sql: string, params: unknown[] = []): Promise<any[]> {
  const url = new URL(stand.api.database.url);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

async function served(deploymentId: string): Promise<{ branch: string; database: string }> {
  const { url } = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
  const res = await fetch(`${url}/which`);
  expect(res.status).toBe(200);
  return (await res.json()) as { branch: string; database: string };
}

describe('a preview of a pull request', () => {
  it("serves the branch's code at its own URL with its own database, and goes away whole when closed", async () => {
    stand.commit(APP, files('main'));
    const repo = path.join(stand.api.config.localReposRoot, APP);
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
        encoding: 'utf8',
      });
    git('checkout', '-q', '-b', 'feature');
    stand.commit(APP, files('feature'));
    git('checkout', '-q', 'main');

    const listed = (await stand.http.get('/v1/integrations/repohost')).body;
    const integration_id: string = (Array.isArray(listed) ? listed : listed.resources)[0].id;
    const created = await stand.http.post('/v2/deployments', {
      name: APP,
      source: 'repohost',
      source_config: { integration_id, repo_url: `file://${repo}`, previews: { enabled: true, ttl_hours: 1 } },
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const parentId: string = created.body.id;
    expect((await stand.untilDone(parentId, created.body.latest_revision_id)).status).toBe('DEPLOYED');

    const opened = await stand.http.post(`/v2/deployments/${parentId}/previews`, { ref: 'feature', number: 7 });
    expect(opened.status, opened.text).toBe(201);
    const previewId: string = opened.body.id;
    const revision = await stand.untilDone(previewId, opened.body.latest_revision_id);
    expect(revision.status, revision.status_message).toBe('DEPLOYED');
    expect(revision.source_revision_config.repo_ref).toBe('feature');

    const [parentServes, previewServes] = [await served(parentId), await served(previewId)];
    expect(parentServes.branch).toBe('main');
    expect(previewServes.branch).toBe('feature');
    expect(previewServes.database).not.toBe(parentServes.database);

    expect((await stand.http.delete(`/v2/deployments/${parentId}/previews/7`)).status).toBe(204);
    await eventually(
      async () => (await stand.http.get(`/v2/deployments/${previewId}`)).status,
      (s) => s === 404,
      60_000,
      500,
    );
    const databases = await stand.api.dataSource.query(`SELECT datname FROM pg_database WHERE datname = $1`, [
      previewServes.database,
    ]);
    expect(databases).toEqual([]);
    expect(
      await stand.api.dataSource.query(`SELECT 1 FROM deployment_credentials WHERE deployment_id = $1`, [previewId]),
    ).toEqual([]);
    // The parent never noticed.
    expect(await served(parentId)).toEqual(parentServes);
  }, 360_000);

  it("with database: copy, a preview starts from the parent's rows (its crons paused), and its writes never reach the parent", async () => {
    const name = `${APP}-copy`;
    stand.commit(name, files('main'));
    const repo = path.join(stand.api.config.localReposRoot, name);
    const listed = (await stand.http.get('/v1/integrations/repohost')).body;
    const integration_id: string = (Array.isArray(listed) ? listed : listed.resources)[0].id;
    const created = await stand.http.post('/v2/deployments', {
      name,
      source: 'repohost',
      source_config: { integration_id, repo_url: `file://${repo}`, previews: { enabled: true, database: 'copy' } },
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const parentId: string = created.body.id;
    expect((await stand.untilDone(parentId, created.body.latest_revision_id)).status).toBe('DEPLOYED');
    const parentDb = (await served(parentId)).database;
    // What the parent's app wrote, as its own role (the table is its role's, as an app's would be).
    const inParent = (sql: string, params: unknown[] = []) => query(parentDb, sql, params);
    await inParent(`CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)`);
    await inParent(`ALTER TABLE notes OWNER TO "${parentDb}"`);
    await inParent(`INSERT INTO notes (body) VALUES ('from the parent')`);
    // A schedule of the parent's agent server (the host's crons table, its columns this test needs).
    await inParent(
      `CREATE TABLE slipway_agent_crons (cron_id text PRIMARY KEY, enabled boolean NOT NULL DEFAULT true, ` +
        `updated_at timestamptz NOT NULL DEFAULT now())`,
    );
    await inParent(`ALTER TABLE slipway_agent_crons OWNER TO "${parentDb}"`);
    await inParent(`INSERT INTO slipway_agent_crons (cron_id) VALUES ('nightly')`);

    const opened = await stand.http.post(`/v2/deployments/${parentId}/previews`, { ref: 'main', number: 3 });
    expect(opened.status, opened.text).toBe(201);
    const revision = await stand.untilDone(opened.body.id, opened.body.latest_revision_id);
    expect(revision.status, revision.status_message).toBe('DEPLOYED');
    const previewDb = (await served(opened.body.id)).database;
    expect(previewDb).not.toBe(parentDb);
    const inPreview = (sql: string, params: unknown[] = []) => query(previewDb, sql, params);
    expect((await inPreview(`SELECT body FROM notes ORDER BY id`)).map((r) => r.body)).toEqual(['from the parent']);
    // The copy belongs to the preview's own role.
    expect((await inPreview(`SELECT tableowner FROM pg_tables WHERE tablename = 'notes'`))[0].tableowner).toBe(
      previewDb,
    );
    await inPreview(`INSERT INTO notes (body) VALUES ('from the preview')`);
    expect((await inParent(`SELECT body FROM notes ORDER BY id`)).map((r) => r.body)).toEqual(['from the parent']);
    // The parent's schedule is in the preview, paused; the parent's own keeps running.
    expect(await inPreview(`SELECT cron_id, enabled FROM slipway_agent_crons`)).toEqual([
      { cron_id: 'nightly', enabled: false },
    ]);
    expect(await inParent(`SELECT cron_id, enabled FROM slipway_agent_crons`)).toEqual([
      { cron_id: 'nightly', enabled: true },
    ]);
  }, 360_000);
});
