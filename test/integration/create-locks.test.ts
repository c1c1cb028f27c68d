import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDataSource,
  DeploymentRepository,
  readyBegunListenerDeployments,
  transitionDeployment,
  type DataSource,
  type EntityManager,
} from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import { OutboxRelay } from '@slipway/jobs';
import { createLogger } from '@slipway/logging';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { LogCapture } from '../support/log-capture.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A create never waits on a lock a worker holds (issue 38): with the workers' own transactions
 * held open, each after its writes and before its COMMIT, on connections of their own as a
 * worker process has them, 20 creates of the same workspace all complete. The transactions are
 * the workers' code, run here so they can be held: the deployer's rollout begins (a listener
 * batch's transaction, its deployments' AWAITING_DATABASE → READY (`readyBegunListenerDeployments`)
 * and `RevisionFlow.beginAll`, held as if it were slow; and an embedded
 * rollout's `RevisionFlow.begin`, which locks its deployment), the deployer's provisioning
 * (provisionDeployment's transaction: the database name, then AWAITING_DATABASE → READY), the
 * outbox relay's pass (its claim and `RevisionFlow.onHandOff`, held open across the hand-off as
 * its Redis call holds it) and the reconciler's retry of a rollout whose deployer died
 * (`RevisionFlow.retryPhase`). Each writes events of the workspace; their numbering lock is taken
 * at COMMIT only (a deferred trigger), so a worker holds it only while it commits.
 */

let api: TestApi;
let workers: DataSource;
let listenerId: string;
const held: ReturnType<DataSource['createQueryRunner']>[] = [];
const logger = createLogger({ name: 'create-locks', level: 'debug', destination: new LogCapture() });

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'locks');
  workers = createDataSource({ url: api.database.url, applicationName: 'slipway-test-worker', poolSize: 8 });
  await workers.initialize();
});
afterAll(async () => {
  for (const qr of held) await qr.release().catch(() => undefined);
  await workers?.destroy();
  await api?.close();
});

let n = 0;
const listenerCreate = async () =>
  (await createImageDeployment(api, `locks-${++n}`, listenerId)) as {
    id: string;
    latest_revision_id: string;
    status: string;
  };

/** Runs `work` in a transaction of the workers' pool and leaves it open (the test commits it). */
async function hold(work: (m: EntityManager) => Promise<unknown>): Promise<unknown> {
  const qr = workers.createQueryRunner();
  held.push(qr);
  await qr.connect();
  await qr.startTransaction();
  return work(qr.manager);
}

const revision = async (id: string) =>
  (await api.dataSource.query(`SELECT status, attempt FROM revisions WHERE id = $1`, [id]))[0];

describe('a create and the workers', () => {
  it('20 creates complete while rollout begins, a provisioning, a relay pass and a retry are held open', async () => {
    // A rollout for the deployer to begin, one whose deployer died, a deployment to provision,
    // and a create whose job the relay has yet to hand off.
    const begun = await listenerCreate();
    const batched = await listenerCreate();
    const died = await listenerCreate();
    await api.relay.drain();
    await api.dataSource.transaction((m) => api.flow.begin(m, died.latest_revision_id, 'rollout', { message: 'x' }));
    const upload = await api.http.post('/v2/deployments', {
      name: `locks-upload`,
      source: 'upload',
      source_config: { deployment_type: 'dev_free' },
      source_revision_config: { langgraph_config_path: 'langgraph.json' },
    });
    expect(upload.status, upload.text).toBe(201);
    const waiting = await listenerCreate();

    expect(
      await hold((m) =>
        api.flow.begin(m, begun.latest_revision_id, 'rollout', {
          message: 'Published to the listener; waiting for its report.',
          set: { heartbeatAt: null },
        }),
      ),
    ).not.toBeNull();
    expect(
      await hold(async (m) => {
        // As ListenerRolloutBegins writes a batch: its deployments' AWAITING_DATABASE → READY,
        // then the rollouts' begin.
        expect(await readyBegunListenerDeployments(m, [batched.latest_revision_id])).toEqual([batched.id]);
        return api.flow.beginAll(m, [batched.latest_revision_id], 'rollout', {
          message: 'Published to the listener; waiting for its report.',
          set: { heartbeatAt: null },
        });
      }),
    ).toEqual([batched.latest_revision_id]);
    await hold(async (m) => {
      await new DeploymentRepository(m).recordDatabase(
        upload.body.id,
        deploymentDatabaseName('locks-upload', upload.body.id),
      );
      expect(await transitionDeployment(m, upload.body.id, 'READY', ['AWAITING_DATABASE'])).toBe('AWAITING_DATABASE');
    });
    expect(await hold((m) => api.flow.retryPhase(m, died.latest_revision_id, 'The deployer stopped.'))).not.toBeNull();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let handing!: () => void;
    const inHandOff = new Promise<void>((resolve) => (handing = resolve));
    const relay = new OutboxRelay(workers, api.queues, logger, {
      onHandOff: async (m, jobs) => {
        await api.flow.onHandOff(m, jobs);
        handing();
        await gate;
      },
    });
    const drained = relay.drain();
    await inHandOff;

    let timer: NodeJS.Timeout | undefined;
    const creates = Promise.all(Array.from({ length: 20 }, () => listenerCreate()));
    const outcome = await Promise.race([
      creates.then(() => 'done' as const),
      new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), 30_000))),
    ]);
    clearTimeout(timer);
    if (outcome === 'waited') {
      // On the workers' pool: the api's is taken by the waiting creates.
      const waits = await workers.query(
        `SELECT application_name, state, wait_event_type, wait_event, left(query, 120) AS query
           FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      release();
      for (const qr of held) await qr.rollbackTransaction().catch(() => undefined);
      expect.fail(`creates waited behind the workers' open transactions:\n${JSON.stringify(waits, null, 1)}`);
    }
    const made = await creates;
    expect(new Set(made.map((d) => d.id)).size).toBe(20);
    for (const d of made) expect(d.status).toBe('AWAITING_DATABASE');

    // The workers' transactions were open the whole time, and still commit as they would have.
    release();
    for (const qr of held) await qr.commitTransaction();
    await drained;
    expect(await revision(begun.latest_revision_id)).toMatchObject({ status: 'DEPLOYING' });
    expect(await revision(batched.latest_revision_id)).toMatchObject({ status: 'DEPLOYING' });
    const [batchedRow] = await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [batched.id]);
    expect(batchedRow).toEqual({ status: 'READY' });
    expect(await revision(died.latest_revision_id)).toEqual({ status: 'AWAITING_DEPLOY', attempt: 1 });
    expect(await revision(waiting.latest_revision_id)).toMatchObject({ status: 'AWAITING_DEPLOY' });
    const [row] = await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [upload.body.id]);
    expect(row).toEqual({ status: 'READY' });
  }, 90_000);
});
