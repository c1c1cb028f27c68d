import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeploymentActivity, DeploymentActivityRepository } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { Reconciler } from '@slipway/pipeline';
import { recordStatements } from '../support/statements.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * UNUSED from real activity (docs/api.md, Deployment status): `DeploymentActivity.record` moves
 * `last_activity_at` (throttled), the reconciler's idle rule reads it, and activity brings an
 * UNUSED deployment back. Time moves by ageing rows with SQL; the throttle's clock is the test's.
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
    createLogger({ name: 'activity-test', level: 'silent' }),
  );
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'activity',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

let n = 0;
/** A READY deployment last redeployed (and last active) `daysAgo` days ago. */
async function readyDeployment(daysAgo: number): Promise<string> {
  const res = await api.http.post('/v2/deployments', {
    name: `act-${++n}-x`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/a:1' },
  });
  expect(res.status).toBe(201);
  await age(res.body.id, daysAgo, 'READY');
  // The listener keeps reporting: only the idle rule may change these deployments.
  await api.dataSource.query(`UPDATE listeners SET last_seen_at = now() WHERE id = $1`, [listenerId]);
  return res.body.id;
}

async function age(id: string, daysAgo: number, status?: string): Promise<void> {
  await api.dataSource.query(
    `UPDATE deployments SET last_activity_at = now() - $2 * interval '1 day', status = coalesce($3, status) WHERE id = $1`,
    [id, daysAgo, status ?? null],
  );
}

const row = async (id: string): Promise<{ status: string; idle_seconds: number; last_activity_at: Date }> =>
  (
    await api.dataSource.query(
      `SELECT status, last_activity_at, extract(epoch FROM now() - last_activity_at)::float AS idle_seconds FROM deployments WHERE id = $1`,
      [id],
    )
  )[0];

describe('UNUSED from real activity', () => {
  it('a deployment redeployed long ago but active recently never turns UNUSED', async () => {
    const busy = await readyDeployment(60); // no redeploy for 60 days…
    const quiet = await readyDeployment(60);
    const activity = new DeploymentActivity(api.dataSource);
    expect(await activity.record(busy)).toBe('recorded'); // …but it served a request just now
    expect((await row(busy)).idle_seconds).toBeLessThan(5);

    const report = await reconciler.run();
    expect(report.idled).toContain(quiet);
    expect(report.idled).not.toContain(busy);
    expect((await row(busy)).status).toBe('READY');

    // Activity 27 days ago still counts; 29 days ago no longer does.
    await age(busy, 27);
    expect((await reconciler.run()).idled).not.toContain(busy);
    expect((await row(busy)).status).toBe('READY');
    await age(busy, 29);
    expect((await reconciler.run()).idled).toContain(busy);
    expect((await row(busy)).status).toBe('UNUSED');
  });

  it('activity between the idle list and the change keeps the deployment READY', async () => {
    const id = await readyDeployment(60);
    const repository = new DeploymentActivityRepository(api.dataSource.manager);
    expect(await repository.idle(api.config.pipeline.idleAfterMs, 100_000)).toContain(id);
    expect(await new DeploymentActivity(api.dataSource).record(id)).toBe('recorded');
    expect(
      await api.dataSource.transaction((m) =>
        new DeploymentActivityRepository(m).markUnused(id, api.config.pipeline.idleAfterMs),
      ),
    ).toBe(false);
    expect((await row(id)).status).toBe('READY');
  });

  it('brings an UNUSED deployment back to READY through the status transition (and its event)', async () => {
    const id = await readyDeployment(60);
    expect((await reconciler.run()).idled).toContain(id);
    expect((await row(id)).status).toBe('UNUSED');

    expect(await new DeploymentActivity(api.dataSource).record(id)).toBe('revived');
    const after = await row(id);
    expect(after.status).toBe('READY');
    expect(after.idle_seconds).toBeLessThan(5);
    const events = await api.dataSource.query(
      `SELECT data FROM events WHERE deployment_id = $1 AND type = 'deployment.status_changed' ORDER BY uid`,
      [id],
    );
    // (The first event is the test's own AWAITING_DATABASE → READY.)
    expect(events.map((e: { data: unknown }) => e.data).slice(-2)).toEqual([
      { from: 'READY', to: 'UNUSED' },
      { from: 'UNUSED', to: 'READY' },
    ]);
    // And the next pass leaves it alone: it was just used.
    expect((await reconciler.run()).idled).not.toContain(id);
  });

  it('does not touch a deployment being deleted', async () => {
    const id = await readyDeployment(60);
    await api.dataSource.query(`UPDATE deployments SET status = 'AWAITING_DELETE' WHERE id = $1`, [id]);
    expect(await new DeploymentActivity(api.dataSource).record(id)).toBe('unchanged');
    expect((await row(id)).status).toBe('AWAITING_DELETE');
    expect((await row(id)).idle_seconds).toBeGreaterThan(59 * 86_400);
  });

  it('writes at most once a minute per deployment: no statement within the minute, no write from a second process', async () => {
    const id = await readyDeployment(60);
    let clock = 1_000_000;
    const activity = new DeploymentActivity(api.dataSource, 60_000, () => clock);
    expect(await activity.record(id)).toBe('recorded');
    const first = (await row(id)).last_activity_at;

    // A burst of requests within the minute: not one statement reaches Postgres.
    const statements = recordStatements();
    try {
      for (let i = 0; i < 100; i++) {
        clock += 500;
        expect(await activity.record(id)).toBe('throttled');
      }
    } finally {
      statements.stop();
    }
    expect(statements.sent.filter((sql) => /deployments/.test(sql))).toEqual([]);
    expect((await row(id)).last_activity_at).toEqual(first);

    // Another process (its own throttle) within the minute: one conditional UPDATE that writes nothing.
    const other = new DeploymentActivity(api.dataSource);
    expect(await other.record(id)).toBe('unchanged');
    expect((await row(id)).last_activity_at).toEqual(first);

    // A minute later (in the row and on the clock) it writes again, once.
    await api.dataSource.query(
      `UPDATE deployments SET last_activity_at = last_activity_at - interval '61 seconds' WHERE id = $1`,
      [id],
    );
    const aged = (await row(id)).last_activity_at;
    clock += 61_000;
    expect(await activity.record(id)).toBe('recorded');
    expect((await row(id)).last_activity_at.getTime()).toBeGreaterThan(aged.getTime());
    expect(await activity.record(id)).toBe('throttled');
  });
});
