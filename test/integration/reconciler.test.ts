import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@slipway/logging';
import { Reconciler } from '@slipway/pipeline';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Each reconciler rule, driven directly against real Postgres and Redis: the test ages rows
 * with SQL (instead of waiting minutes) and runs one pass.
 */
let api: TestApi;
let reconciler: Reconciler;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  reconciler = new Reconciler(
    api.dataSource,
    api.queues,
    api.flow,
    api.config.pipeline,
    createLogger({ name: 'reconciler-test', level: 'silent' }),
  );
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'reconcile',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

let n = 0;
async function imageDeployment(): Promise<{ id: string; revisionId: string }> {
  const res = await api.http.post('/v2/deployments', {
    name: `rec-${++n}-x`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/a:1' },
  });
  expect(res.status).toBe(201);
  return { id: res.body.id, revisionId: res.body.latest_revision_id };
}

const revision = async (id: string) =>
  (await api.dataSource.query(`SELECT status, status_message, attempt FROM revisions WHERE id = $1`, [id]))[0];
const deployment = async (id: string) =>
  (await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [id]))[0];

describe('Reconciler', () => {
  it.each([
    ['CREATING', 'CREATE_FAILED', /handed to the job queue within 10 min/],
    ['AWAITING_DEPLOY', 'DEPLOY_FAILED', /did not become healthy within its deadline of 10 min/],
    ['DEPLOYING', 'DEPLOY_FAILED', /did not become healthy within its deadline of 10 min/],
  ])('fails a %s revision past its deadline as %s', async (status, expected, message) => {
    const { revisionId } = await imageDeployment();
    await api.dataSource.query(
      `UPDATE revisions SET status = $2, deadline_at = now() - interval '1 second' WHERE id = $1`,
      [revisionId, status],
    );
    const report = await reconciler.run();
    expect(report.timedOut).toContain(revisionId);
    const row = await revision(revisionId);
    expect(row.status).toBe(expected);
    expect(row.status_message).toMatch(message);
    // Ending it released the slot: nothing of this deployment is left in flight.
    const [{ open }] = await api.dataSource.query(
      `SELECT count(*)::int AS open FROM revisions WHERE id = $1 AND deadline_at IS NOT NULL`,
      [revisionId],
    );
    expect(open).toBe(0);
  });

  it('fails a build past its deadline as BUILD_FAILED', async () => {
    const { revisionId } = await imageDeployment();
    await api.dataSource.query(
      `UPDATE revisions SET status = 'BUILDING', deadline_at = now() - interval '1 second' WHERE id = $1`,
      [revisionId],
    );
    await reconciler.run();
    expect(await revision(revisionId)).toMatchObject({
      status: 'BUILD_FAILED',
      status_message: expect.stringMatching(/build did not finish/),
    });
  });

  it('re-enqueues a phase whose job vanished, then gives up after the attempts', async () => {
    const { revisionId } = await imageDeployment();
    await api.relay.drain(); // → AWAITING_DEPLOY with job rollout-<id>-a0 in Redis
    expect((await revision(revisionId)).status).toBe('AWAITING_DEPLOY');
    for (let attempt = 0; attempt < api.config.pipeline.maxPhaseAttempts; attempt++) {
      // The job is lost (e.g. Redis lost it) and the phase has been quiet for a while.
      await api.queues.rollouts.obliterate({ force: true });
      await api.dataSource.query(
        `UPDATE revisions SET status_changed_at = now() - interval '1 hour', heartbeat_at = NULL WHERE id = $1`,
        [revisionId],
      );
      await reconciler.run();
      await api.relay.drain();
    }
    const row = await revision(revisionId);
    expect(row.status).toBe('DEPLOY_FAILED');
    expect(row.status_message).toMatch(/stopped responding\. Gave up after 3 attempts/);
    const events = await api.dataSource.query(
      `SELECT from_status, to_status FROM revision_events WHERE revision_id = $1 ORDER BY id`,
      [revisionId],
    );
    expect(
      events.filter((e: any) => e.from_status === 'AWAITING_DEPLOY' && e.to_status === 'AWAITING_DEPLOY'),
    ).toHaveLength(2);
  });

  it('leaves a phase alone while its job waits for a worker', async () => {
    const { revisionId } = await imageDeployment();
    await api.relay.drain();
    await api.dataSource.query(`UPDATE revisions SET status_changed_at = now() - interval '1 hour' WHERE id = $1`, [
      revisionId,
    ]);
    const report = await reconciler.run();
    expect(report.retried).not.toContain(revisionId);
    expect(await revision(revisionId)).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 0 });
  });

  it('turns the deployments of a silent listener UNKNOWN, with their rollouts', async () => {
    const { id, revisionId } = await imageDeployment();
    await api.dataSource.query(`UPDATE deployments SET status = 'READY' WHERE id = $1`, [id]);
    await api.dataSource.query(`UPDATE revisions SET status = 'DEPLOYING' WHERE id = $1`, [revisionId]);
    await api.dataSource.query(`UPDATE listeners SET last_seen_at = now() - interval '1 hour' WHERE id = $1`, [
      listenerId,
    ]);
    const report = await reconciler.run();
    expect(report.unknownListenerDeployments).toContain(id);
    expect((await deployment(id)).status).toBe('UNKNOWN');
    expect(await revision(revisionId)).toMatchObject({
      status: 'UNKNOWN',
      status_message: expect.stringMatching(/listener stopped reporting/),
    });
    await api.dataSource.query(`UPDATE listeners SET last_seen_at = now() WHERE id = $1`, [listenerId]);
  });

  it('marks a deployment idle past the configured period UNUSED', async () => {
    const { id } = await imageDeployment();
    await api.dataSource.query(
      `UPDATE deployments SET status = 'READY', last_activity_at = now() - interval '60 days' WHERE id = $1`,
      [id],
    );
    const report = await reconciler.run();
    expect(report.idled).toContain(id);
    expect((await deployment(id)).status).toBe('UNUSED');
  });

  it('re-enqueues provisioning whose job is gone', async () => {
    const { id } = await imageDeployment();
    // A listener's deployment is created with its database name and no job (its first rollout
    // makes it READY): this one stands for one created before, waiting for its database, whose
    // job Redis lost.
    await api.dataSource.query(`DELETE FROM outbox WHERE job_id = $1`, [`provision-${id}`]);
    await api.dataSource.query(
      `UPDATE deployments SET database_name = NULL, status_changed_at = now() - interval '1 hour' WHERE id = $1`,
      [id],
    );
    const report = await reconciler.run();
    expect(report.reprovisioned).toContain(id);
    const rows = await api.dataSource.query(`SELECT job_name FROM outbox WHERE job_id = $1 AND sent_at IS NULL`, [
      `provision-${id}`,
    ]);
    expect(rows).toEqual([{ job_name: 'provision.deployment' }]);
  });

  it("leaves a listener's deployment waiting for its first rollout AWAITING_DATABASE, with no provisioning", async () => {
    const { id } = await imageDeployment();
    await api.dataSource.query(`UPDATE deployments SET status_changed_at = now() - interval '1 hour' WHERE id = $1`, [
      id,
    ]);
    const report = await reconciler.run();
    expect(report.reprovisioned).not.toContain(id);
    expect((await deployment(id)).status).toBe('AWAITING_DATABASE');
    const jobs = await api.dataSource.query(`SELECT job_name FROM outbox WHERE job_id = $1`, [`provision-${id}`]);
    expect(jobs).toEqual([]);
  });

  it('removes a listener deployment whose teardown the listener never confirmed, after the deadline', async () => {
    const { id } = await imageDeployment();
    expect((await api.http.delete(`/v2/deployments/${id}`)).status).toBe(204);
    await reconciler.run();
    expect((await api.http.get(`/v2/deployments/${id}`)).status).toBe(200);
    await api.dataSource.query(`UPDATE deployments SET status_changed_at = now() - interval '1 day' WHERE id = $1`, [
      id,
    ]);
    const report = await reconciler.run();
    expect(report.teardownsForced).toContain(id);
    expect((await api.http.get(`/v2/deployments/${id}`)).status).toBe(404);
  });
});

describe('Reconciler housekeeping', () => {
  it('drops unsigned webhook deliveries after a day and signed ones after 30 days', async () => {
    const [{ id: integrationId }] = await api.dataSource.query(
      `INSERT INTO integrations (id, workspace_id, provider, name) VALUES (gen_random_uuid(), $1, 'local', 'hk') RETURNING id`,
      [api.workspaceId],
    );
    const insert = (valid: boolean, age: string) =>
      api.dataSource.query(
        `INSERT INTO webhook_deliveries (id, integration_id, signature_valid, status_code, outcome, received_at)
         VALUES (gen_random_uuid(), $1, $2, 200, $3, now() - $4::interval) RETURNING outcome`,
        [integrationId, valid, `${valid ? 'signed' : 'unsigned'} ${age}`, age],
      );
    for (const [valid, age] of [
      [false, '2 days'],
      [false, '1 hour'],
      [true, '2 days'],
      [true, '31 days'],
    ] as const)
      await insert(valid, age);
    await reconciler.run();
    const left = await api.dataSource.query(
      `SELECT outcome FROM webhook_deliveries WHERE integration_id = $1 ORDER BY outcome`,
      [integrationId],
    );
    expect(left.map((r: any) => r.outcome)).toEqual(['signed 2 days', 'unsigned 1 hour']);
  });
});
