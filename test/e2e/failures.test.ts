import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REVISION_TERMINAL } from '@slipway/domain';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

const TERMINAL = [...REVISION_TERMINAL];
/**
 * Short enough that deadlines pass inside a test, long enough for a loaded 2-core machine: a
 * retried phase keeps the deadline of its first attempt, and the new deployer's own start comes
 * out of it (15 s was too little on a machine where starting one took most of that).
 */
const ROLLOUT_DEADLINE_MS = '30000';

async function createListener(api: TestApi, computeId: string): Promise<string> {
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: computeId,
    compute_config: { k8s_namespaces: null },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const imageBody = (name: string, listenerId: string, tag = '1') => ({
  name,
  source: 'external_container',
  source_config: { listener_id: listenerId },
  source_revision_config: { image_uri: `registry.example/${name}:${tag}` },
});

async function revisionRow(api: TestApi, id: string) {
  const [row] = await api.dataSource.query(
    `SELECT status, status_message, attempt, heartbeat_at FROM revisions WHERE id = $1`,
    [id],
  );
  return row;
}

describe('kill -9 of the deployer during a rollout', () => {
  let api: TestApi;
  let builder: ServiceProcess;
  const spawned: ServiceProcess[] = [];
  const env = () => serviceEnv(api, { SLIPWAY_ROLLOUT_DEADLINE_MS: ROLLOUT_DEADLINE_MS });

  beforeAll(async () => {
    api = await startTestApi({ SLIPWAY_ROLLOUT_DEADLINE_MS: ROLLOUT_DEADLINE_MS });
    api.relay.start();
    // The builder stays up throughout: any live worker process runs the reconciler.
    builder = await startService('builder', env());
  }, 60_000);

  afterAll(async () => {
    await Promise.all([builder?.stop(), ...spawned.map((s) => s.stop('SIGKILL'))]);
    await api?.close();
  });

  /**
   * Freezes a deployer inside a rollout: the test holds the deployment row lock, so the
   * deployer's begin blocks after it has claimed the job (seen waiting for that lock). Then kill -9.
   */
  async function killDeployerMidRollout(deploymentName: string): Promise<{ deploymentId: string; revisionId: string }> {
    const listenerId = await createListener(api, `${deploymentName}-cluster`);
    const { body: d } = await api.http.post('/v2/deployments', imageBody(deploymentName, listenerId));
    await eventually(
      () => revisionRow(api, d.latest_revision_id),
      (r) => r.status === 'AWAITING_DEPLOY',
    );

    const blocker = new pg.Client({ connectionString: api.database.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM deployments WHERE id = $1 FOR UPDATE', [d.id]);
    const deployer = await startService('deployer', env());
    spawned.push(deployer);
    await eventually(
      async () =>
        (
          await api.dataSource.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND application_name = 'slipway-deployer' AND wait_event_type = 'Lock'`,
          )
        )[0].n as number,
      (n) => n > 0,
    );
    deployer.child.kill('SIGKILL');
    expect((await deployer.exited).signal).toBe('SIGKILL');
    await blocker.query('ROLLBACK');
    await blocker.end();
    return { deploymentId: d.id, revisionId: d.latest_revision_id };
  }

  it('retries the rollout on a new deployer (reconciler) and the revision moves on', async () => {
    const { revisionId } = await killDeployerMidRollout('killed-then-restarted');
    expect((await revisionRow(api, revisionId)).status).toBe('AWAITING_DEPLOY');
    spawned.push(await startService('deployer', env()));
    // On a loaded machine the whole retried phase can pass while the new deployer reports ready:
    // its moves are read from the revision's events, not caught live.
    const row = await eventually(
      () => revisionRow(api, revisionId),
      (r) => r.status === 'DEPLOYING' || TERMINAL.includes(r.status),
      30_000,
    );
    expect(row.attempt).toBe(1);
    const moves = await api.dataSource.query(
      `SELECT from_status, to_status, message FROM revision_events
        WHERE revision_id = $1 AND from_status = 'AWAITING_DEPLOY' ORDER BY id`,
      [revisionId],
    );
    expect(moves.slice(0, 2)).toEqual([
      {
        from_status: 'AWAITING_DEPLOY',
        to_status: 'AWAITING_DEPLOY',
        message: 'The deployer working on this revision stopped responding. Retrying.',
      },
      expect.objectContaining({ to_status: 'DEPLOYING' }),
    ]);
    // No agent reports in this test: the rollout deadline ends it, with a message saying so.
    const done = await eventually(
      () => revisionRow(api, revisionId),
      (r) => TERMINAL.includes(r.status),
      60_000,
    );
    expect(done.status).toBe('DEPLOY_FAILED');
    expect(done.status_message).toMatch(/deadline/);
  }, 120_000);

  it('ends the revision in a terminal status even with no deployer left', async () => {
    for (const s of spawned) await s.stop('SIGKILL');
    const { revisionId } = await killDeployerMidRollout('killed-for-good');
    const done = await eventually(
      () => revisionRow(api, revisionId),
      (r) => TERMINAL.includes(r.status),
      60_000,
    );
    expect(done.status).toBe('DEPLOY_FAILED');
    expect(done.status_message).toMatch(/deadline|stopped responding/);
  }, 120_000);

  it('leaves no revision non-terminal past its deadline', async () => {
    const [{ count }] = await api.dataSource.query(
      `SELECT count(*)::int AS count FROM revisions
        WHERE status <> ALL($1::text[]) AND deadline_at < now() - interval '3 seconds'`,
      [TERMINAL],
    );
    expect(count).toBe(0);
  });
});

describe('Redis unreachable', () => {
  let api: TestApi;
  let proxy: TcpProxy;
  let direct: Redis;
  let rollouts: Queue;

  beforeAll(async () => {
    const { inject } = await import('vitest');
    proxy = await TcpProxy.start(inject('redisUrl'), 6379);
    api = await startTestApi({ REDIS_URL: proxy.urlFor(inject('redisUrl')) });
    api.relay.start();
    direct = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
    rollouts = new Queue('rollouts', { connection: direct, prefix: api.config.queuePrefix });
  });

  afterAll(async () => {
    await proxy?.restore();
    await rollouts?.close();
    direct?.disconnect();
    await api?.close();
    await proxy?.close();
  });

  it('still answers 201 and enqueues the job once Redis is back (outbox)', async () => {
    const listenerId = await createListener(api, 'outage-cluster');
    await proxy.refuse();
    // Degraded, not unready: writes are still accepted (the outbox holds their jobs). An admin sees why.
    const ready = await api.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'degraded', checks: { redis: 'unreachable' } });

    const res = await api.http.post('/v2/deployments', imageBody('during-outage', listenerId));
    expect(res.status).toBe(201);
    const revisionId = res.body.latest_revision_id;
    const jobId = `rollout-${revisionId}-a0`;
    // The relay keeps trying and failing: the row stays pending, the revision stays CREATING.
    const [pending] = await eventually(
      () => api.dataSource.query(`SELECT attempts, sent_at, last_error FROM outbox WHERE job_id = $1`, [jobId]),
      (rows: any[]) => rows[0]?.attempts >= 1,
    );
    expect(pending.sent_at).toBeNull();
    expect((await revisionRow(api, revisionId)).status).toBe('CREATING');
    expect(await rollouts.getJob(jobId)).toBeUndefined();

    await proxy.restore();
    const job = await eventually(
      () => rollouts.getJob(jobId),
      (j) => !!j,
      40_000,
    );
    expect(job!.data).toMatchObject({ revisionId, attempt: 0 });
    await eventually(
      () => revisionRow(api, revisionId),
      (r) => r.status === 'AWAITING_DEPLOY',
    );
    const [sent] = await api.dataSource.query(`SELECT sent_at FROM outbox WHERE job_id = $1`, [jobId]);
    expect(sent.sent_at).not.toBeNull();
  }, 60_000);
});

describe('50 concurrent PATCHes to one deployment', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('never has two revisions in flight; the newest waiting one starts, the others are SKIPPED', async () => {
    const listenerId = await createListener(api, 'patch-storm');
    const { body: d } = await api.http.post('/v2/deployments', imageBody('patch-storm', listenerId));
    const first = d.latest_revision_id;

    // Sample the invariant while the storm runs, straight from Postgres.
    let maxInFlight = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [{ n }] = await api.dataSource.query(
          `SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1 AND started_at IS NOT NULL AND status <> ALL($2::text[])`,
          [d.id, TERMINAL],
        );
        maxInFlight = Math.max(maxInFlight, n);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.http.patch(`/v2/deployments/${d.id}`, {
          source_revision_config: { image_uri: `registry.example/patch-storm:${i + 2}` },
        }),
      ),
    );
    sampling = false;
    await sampler;
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(maxInFlight).toBe(1);

    const statuses = async () =>
      (await api.dataSource.query(
        `SELECT id, status, started_at FROM revisions WHERE deployment_id = $1 ORDER BY created_at, id`,
        [d.id],
      )) as any[];
    let rows = await statuses();
    expect(rows).toHaveLength(51);
    expect(rows.filter((r) => r.started_at !== null).map((r) => r.id)).toEqual([first]);
    expect(rows.slice(1).every((r) => r.status === 'QUEUED')).toBe(true);

    // The first one ends: exactly the newest waiting revision starts, all older waiting ones are skipped.
    const ended = await api.dataSource.transaction((m) =>
      api.flow.transition(m, first, 'INTERRUPTED', { message: 'test: ended' }),
    );
    expect(ended).toMatchObject({ from: 'CREATING', to: 'INTERRUPTED' });
    const { body: latest } = await api.http.get(`/v2/deployments/${d.id}`);
    rows = await statuses();
    const started = rows.filter((r) => r.started_at !== null && !TERMINAL.includes(r.status));
    expect(started.map((r) => r.id)).toEqual([latest.latest_revision_id]);
    expect(rows.filter((r) => r.status === 'SKIPPED')).toHaveLength(49);
    const newest = await api.http.get(`/v2/deployments/${d.id}/revisions/${latest.latest_revision_id}`);
    expect(newest.body.source_revision_config.image_uri).toMatch(/patch-storm:\d+$/);
  }, 60_000);

  it('is guarded by Postgres itself: a second started revision violates the unique index', async () => {
    const listenerId = await createListener(api, 'index-guard');
    const { body: d } = await api.http.post('/v2/deployments', imageBody('index-guard', listenerId));
    await api.http.patch(`/v2/deployments/${d.id}`, {
      source_revision_config: { image_uri: 'registry.example/index-guard:2' },
    });
    const { body: after } = await api.http.get(`/v2/deployments/${d.id}`);
    await expect(
      api.dataSource.query(`UPDATE revisions SET started_at = now() WHERE id = $1`, [after.latest_revision_id]),
    ).rejects.toThrow(/revisions_one_in_flight_idx/);
  });
});
