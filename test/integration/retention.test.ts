import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@slipway/logging';
import { JOB_CATALOG } from '@slipway/jobs';
import { Retention } from '@slipway/pipeline';
import { uploadFilePath, uploadObjectPath } from '@slipway/source';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The retention pass (docs/operations.md, Quotas and retention), run as the `retention.prune`
 * job runs it, against real rows and real artifact directories: artifacts beyond each
 * deployment's quota pruned (never the active one, never one a kept revision still uses), a
 * redeploy of a pruned revision rebuilds it, log lines trimmed oldest first per revision and
 * per workspace, old events and sent outbox rows deleted.
 */

let api: TestApi;
let orgAdmin: HttpClient;
let retention: Retention;

beforeAll(async () => {
  api = await startTestApi();
  orgAdmin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
  retention = new Retention(api.dataSource, api.config, createLogger({ name: 'retention-test', level: 'silent' }));
});
afterAll(async () => {
  await api?.close();
});

async function workspace(quotas: Record<string, number>) {
  const ws = await otherWorkspaceClient(api, `retention-${randomUUID().slice(0, 8)}`);
  expect((await orgAdmin.put(`/v2/workspaces/${ws.workspaceId}/quotas`, quotas)).status).toBe(200);
  return ws;
}

async function uploadDeployment(client: HttpClient): Promise<string> {
  const res = await client.post('/v2/deployments', {
    name: `ret-${randomUUID().slice(0, 8)}`,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** A finished revision with a real artifact directory (or the given ref), `minutesAgo` old. */
async function builtRevision(
  deploymentId: string,
  minutesAgo: number,
  artifactRef?: string,
): Promise<{ id: string; ref: string }> {
  const id = randomUUID();
  const ref = artifactRef ?? path.join(api.config.dataDir, 'artifacts', id);
  if (!artifactRef) {
    mkdirSync(ref, { recursive: true });
    writeFileSync(path.join(ref, 'artifact.json'), '{}');
  }
  await api.dataSource.query(
    `INSERT INTO revisions (id, deployment_id, status, source, source_revision_config, artifact_ref, image_uri, resource_spec, created_at)
     VALUES ($1, $2, 'DEPLOYED', 'upload', $3, $4, $5, '{"min_scale":1,"max_scale":1}', now() - make_interval(mins => $6))`,
    [
      id,
      deploymentId,
      JSON.stringify({ source_tarball_path: `uploads/${deploymentId}/x.tar.gz` }),
      ref,
      `artifact://${id}`,
      minutesAgo,
    ],
  );
  return { id, ref };
}

const revisionRow = async (id: string) =>
  (await api.dataSource.query(`SELECT artifact_ref, artifact_pruned_at, status FROM revisions WHERE id = $1`, [id]))[0];

describe('artifacts', () => {
  it(
    'keeps the active revision and the newest artifacts_kept others; prunes the rest (files and ref), ' +
      'unless a kept revision shares the artifact',
    async () => {
      const { client } = await workspace({ artifacts_kept: 1 });
      const deploymentId = await uploadDeployment(client);
      const r1 = await builtRevision(deploymentId, 40);
      const r2 = await builtRevision(deploymentId, 30);
      // r3 redeployed r1: it rolled out r1's artifact.
      const r3 = await builtRevision(deploymentId, 20, r1.ref);
      const r4 = await builtRevision(deploymentId, 10);
      await api.dataSource.query(
        `UPDATE deployments SET active_revision_id = $2, latest_revision_id = $2 WHERE id = $1`,
        [deploymentId, r4.id],
      );
      const report = await retention.run();

      expect(report.artifactsPruned).toContain(r2.id);
      expect(report.artifactsPruned).not.toContain(r1.id);
      expect(existsSync(r2.ref)).toBe(false);
      expect(await revisionRow(r2.id)).toMatchObject({ artifact_ref: null, artifact_pruned_at: expect.any(Date) });
      for (const kept of [r1, r3, r4]) expect(existsSync(kept.ref), kept.id).toBe(true);
      expect((await revisionRow(r4.id)).artifact_ref).toBe(r4.ref);
      expect((await revisionRow(r1.id)).artifact_ref).toBe(r1.ref);

      // A second pass has nothing more to do for this deployment.
      expect((await retention.run()).artifactsPruned.filter((id) => [r1, r2, r3, r4].some((r) => r.id === id))).toEqual(
        [],
      );
    },
  );

  it('a redeploy of a pruned revision rebuilds it; one whose artifact is kept rolls out directly', async () => {
    const { client } = await workspace({ artifacts_kept: 1 });
    const deploymentId = await uploadDeployment(client);
    const old = await builtRevision(deploymentId, 30);
    const recent = await builtRevision(deploymentId, 20);
    const active = await builtRevision(deploymentId, 10);
    await api.dataSource.query(
      `UPDATE deployments SET active_revision_id = $2, latest_revision_id = $2 WHERE id = $1`,
      [deploymentId, active.id],
    );
    await retention.run();
    expect((await revisionRow(old.id)).artifact_ref).toBeNull();
    const shown = await client.get(`/v2/deployments/${deploymentId}/revisions/${old.id}`);
    expect(shown.body.artifact_pruned_at).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(
      (await client.get(`/v2/deployments/${deploymentId}/revisions/${recent.id}`)).body.artifact_pruned_at,
    ).toBeNull();

    const redeployed = await client.post(`/v2/deployments/${deploymentId}/revisions/${old.id}/redeploy`);
    expect(redeployed.status, redeployed.text).toBe(200);
    const rebuilt = redeployed.body.latest_revision_id as string;
    expect(rebuilt).not.toBe(old.id);
    const [row] = await api.dataSource.query(
      `SELECT artifact_ref, redeployed_from, image_uri FROM revisions WHERE id = $1`,
      [rebuilt],
    );
    expect(row).toEqual({ artifact_ref: null, redeployed_from: old.id, image_uri: null });
    const jobs = await api.dataSource.query(`SELECT job_name FROM outbox WHERE payload->>'revisionId' = $1`, [rebuilt]);
    expect(jobs).toEqual([{ job_name: 'build.revision' }]);

    // The kept one needs no build (it waits behind the rebuild, one revision in flight per deployment).
    const direct = await client.post(`/v2/deployments/${deploymentId}/revisions/${recent.id}/redeploy`);
    expect(direct.status, direct.text).toBe(200);
    const [directRow] = await api.dataSource.query(`SELECT artifact_ref FROM revisions WHERE id = $1`, [
      direct.body.latest_revision_id,
    ]);
    expect(directRow.artifact_ref).toBe(recent.ref);
  });

  it('never prunes a revision still in flight', async () => {
    const { client } = await workspace({ artifacts_kept: 0 });
    const deploymentId = await uploadDeployment(client);
    const finished = await builtRevision(deploymentId, 30);
    const inFlight = await builtRevision(deploymentId, 20);
    await api.dataSource.query(`UPDATE revisions SET status = 'AWAITING_DEPLOY' WHERE id = $1`, [inFlight.id]);
    const report = await retention.run();
    expect(report.artifactsPruned).toContain(finished.id);
    expect(report.artifactsPruned).not.toContain(inFlight.id);
    expect(existsSync(inFlight.ref)).toBe(true);
  });
});

describe('log lines', () => {
  async function lines(revisionId: string, n: number, prefix: string) {
    const values = Array.from({ length: n }, (_, i) => `('${revisionId}', 'build', 'info', '${prefix} ${i}')`).join(
      ', ',
    );
    await api.dataSource.query(`INSERT INTO revision_logs (revision_id, type, level, message) VALUES ${values}`);
  }
  const messages = async (revisionId: string) =>
    (
      await api.dataSource.query(`SELECT message FROM revision_logs WHERE revision_id = $1 ORDER BY id`, [revisionId])
    ).map((r: { message: string }) => r.message);

  it('keeps the newest log_lines_per_revision of each revision, then the newest log_lines_total of the workspace', async () => {
    const { client } = await workspace({ log_lines_per_revision: 10, log_lines_total: 15 });
    const deploymentId = await uploadDeployment(client);
    const a = await builtRevision(deploymentId, 20);
    const b = await builtRevision(deploymentId, 10);
    await lines(a.id, 30, 'a');
    await lines(b.id, 12, 'b');

    const report = await retention.run();
    expect(report.logLinesTrimmed).toBeGreaterThanOrEqual(27);
    // Per revision: a keeps a 20..29, b keeps b 2..11 (20 lines); then the workspace's 5 oldest go.
    expect(await messages(a.id)).toEqual(Array.from({ length: 5 }, (_, i) => `a ${25 + i}`));
    expect(await messages(b.id)).toEqual(Array.from({ length: 10 }, (_, i) => `b ${2 + i}`));
  });
});

describe('events and outbox rows', () => {
  it('deletes events older than the retention and outbox rows sent long ago; keeps recent and unsent ones', async () => {
    const { workspaceId } = await workspace({ artifacts_kept: 5 });
    await api.dataSource.query(
      `INSERT INTO events (workspace_id, type, created_at) VALUES ($1, 'old.event', now() - interval '40 days'), ($1, 'new.event', now())`,
      [workspaceId],
    );
    const tag = randomUUID();
    await api.dataSource.query(
      `INSERT INTO outbox (queue, job_name, job_id, payload, sent_at, created_at) VALUES
        ('maintenance', 'reconcile.tick', $1 || '-old', '{}', now() - interval '3 days', now() - interval '3 days'),
        ('maintenance', 'reconcile.tick', $1 || '-new', '{}', now(), now()),
        ('maintenance', 'reconcile.tick', $1 || '-unsent', '{}', NULL, now() - interval '3 days')`,
      [tag],
    );
    // Outbound webhook deliveries: finished old ones go, recent and still pending ones stay.
    const webhookId = randomUUID();
    await api.dataSource.query(
      `INSERT INTO outbound_webhooks (id, workspace_id, url, event_types, secret_sealed) VALUES ($1, $2, ` +
        `'https://hooks.example.com/', '{deployment.created}', 'x')`,
      [webhookId, workspaceId],
    );
    await api.dataSource.query(
      `INSERT INTO outbound_deliveries (id, webhook_id, event_id, event_type, payload, status, created_at) VALUES
        (gen_random_uuid(), $1, 1, 'old.succeeded', '{}', 'succeeded', now() - interval '40 days'),
        (gen_random_uuid(), $1, 2, 'old.pending', '{}', 'pending', now() - interval '40 days'),
        (gen_random_uuid(), $1, 3, 'new.failed', '{}', 'failed', now())`,
      [webhookId],
    );
    const report = await retention.run();
    const deliveries = await api.dataSource.query(
      `SELECT event_type FROM outbound_deliveries WHERE webhook_id = $1 ORDER BY event_id`,
      [webhookId],
    );
    expect(deliveries.map((r: { event_type: string }) => r.event_type)).toEqual(['old.pending', 'new.failed']);
    expect(report.eventsDeleted).toBeGreaterThanOrEqual(1);
    expect(
      (await api.dataSource.query(`SELECT type FROM events WHERE workspace_id = $1`, [workspaceId])).map(
        (r: { type: string }) => r.type,
      ),
    ).toEqual(['new.event']);
    const left = await api.dataSource.query(`SELECT job_id FROM outbox WHERE job_id LIKE $1 ORDER BY job_id`, [
      `${tag}-%`,
    ]);
    expect(left.map((r: { job_id: string }) => r.job_id)).toEqual([`${tag}-new`, `${tag}-unsent`]);
  });

  it('deletes uploads no revision needs: abandoned ones and completed ones unused for days; keeps the rest', async () => {
    const { client } = await workspace({ artifacts_kept: 5 });
    const deploymentId = await uploadDeployment(client);
    const upload = async (createdDaysAgo: number, completedDaysAgo: number | null) => {
      const objectPath = uploadObjectPath(deploymentId);
      const file = uploadFilePath(api.config.dataDir, objectPath);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(completedDaysAgo === null ? `${file}.part` : file, 'tarball');
      await api.dataSource.query(
        `INSERT INTO uploads (object_path, deployment_id, size_bytes, created_at, completed_at)
         VALUES ($1, $2, 7, now() - make_interval(days => $3), CASE WHEN $4::int IS NULL THEN NULL ` +
          `ELSE now() - make_interval(days => $4::int) END)`,
        [objectPath, deploymentId, createdDaysAgo, completedDaysAgo],
      );
      return { objectPath, file };
    };
    const abandoned = await upload(3, null);
    const unused = await upload(10, 10);
    const used = await upload(10, 10);
    const recent = await upload(1, 1);
    const inProgress = await upload(0, null);
    const revision = await builtRevision(deploymentId, 5);
    await api.dataSource.query(`UPDATE revisions SET source_revision_config = $2 WHERE id = $1`, [
      revision.id,
      JSON.stringify({ source_tarball_path: used.objectPath }),
    ]);

    const report = await retention.run();
    expect([...report.uploadsDeleted].filter((p) => p.includes(deploymentId)).sort()).toEqual(
      [abandoned.objectPath, unused.objectPath].sort(),
    );
    expect(existsSync(`${abandoned.file}.part`)).toBe(false);
    expect(existsSync(unused.file)).toBe(false);
    for (const kept of [used, recent]) expect(existsSync(kept.file)).toBe(true);
    expect(existsSync(`${inProgress.file}.part`)).toBe(true);
    const left = await api.dataSource.query(
      `SELECT object_path FROM uploads WHERE deployment_id = $1 ORDER BY object_path`,
      [deploymentId],
    );
    expect(left.map((r: { object_path: string }) => r.object_path)).toEqual(
      [used.objectPath, recent.objectPath, inProgress.objectPath].sort(),
    );
  });

  it('is a catalog job on the maintenance queue', () => {
    expect(JOB_CATALOG['retention.prune']).toMatchObject({ queue: 'maintenance' });
    expect(JOB_CATALOG['retention.prune'].jobId({})).toBe('retention-prune');
  });
});
