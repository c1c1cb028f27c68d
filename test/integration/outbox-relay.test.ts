import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Redis } from 'ioredis';
import {
  closeQueues,
  createQueues,
  enqueueAllInOutbox,
  OUTBOX_CHANNEL,
  OutboxRelay,
  outboxJob,
  producerConnection,
  type HandOffHook,
  type Queues,
  type RelayOptions,
} from '@slipway/jobs';
import { createLogger } from '@slipway/logging';
import { createListener } from '../support/fixtures.js';
import { LogCapture } from '../support/log-capture.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The outbox relay under a backlog (docs/architecture.md, Pipeline): batches grow while full
 * ones keep coming, several passes run at once, and relays of several processes drain the same
 * outbox; no row goes out twice, every row goes out, every revision is handed on once. While
 * Redis refuses jobs the backlog waits in order; once Redis is back, it drains at once.
 */

let api: TestApi;
let listenerId: string;
const logger = createLogger({ name: 'relay-test', level: 'debug', destination: new LogCapture() });

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_QUOTA_DEPLOYMENTS: '1000' });
  listenerId = await createListener(api, 'relay');
});
afterAll(async () => {
  await api?.close();
});

/** `count` pending outbox rows of a job without a hand-off (provision.deployment), each its own job id. */
async function backlog(count: number): Promise<void> {
  await api.dataSource.query(
    `INSERT INTO outbox (queue, job_name, job_id, payload)
     SELECT 'rollouts', 'provision.deployment', 'provision-' || u, jsonb_build_object('deploymentId', u)
       FROM (SELECT gen_random_uuid()::text AS u FROM generate_series(1, $1::int)) g`,
    [count],
  );
}

async function imageRevisions(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.http.post('/v2/deployments', {
      name: `relay-${Date.now()}-${i}`,
      source: 'external_container',
      source_config: { listener_id: listenerId },
      source_revision_config: { image_uri: 'registry.example/a:1' },
    });
    expect(res.status, res.text).toBe(201);
    ids.push(res.body.latest_revision_id);
  }
  return ids;
}

const pending = async (): Promise<number> =>
  Number((await api.dataSource.query(`SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL`))[0].n);

/** The real hand-off, recording every job it is given, the batch sizes, and how many batches overlapped. */
function recording() {
  const handed = new Map<string, number>();
  const batches: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const hook: HandOffHook = async (manager, jobs) => {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    try {
      batches.push(jobs.length);
      await api.flow.onHandOff(manager, jobs);
      // Holds the batch open a moment, so passes in flight at once overlap here.
      await new Promise((r) => setTimeout(r, 15));
      for (const job of jobs) {
        const key = `${job.name} ${JSON.stringify(job.payload)}`;
        handed.set(key, (handed.get(key) ?? 0) + 1);
      }
    } finally {
      inFlight--;
    }
  };
  return { hook, handed, batches, maxInFlight: () => maxInFlight };
}

const ready = (redis: Redis) =>
  redis.status === 'ready' ? Promise.resolve() : new Promise<void>((resolve) => redis.once('ready', () => resolve()));

const relayOf = (hook: HandOffHook, options: RelayOptions, queues: Queues = api.queues) =>
  new OutboxRelay(api.dataSource, queues, logger, { onHandOff: hook }, options);

describe('a backlog', () => {
  it('drains in growing batches, several at once: every row sent exactly once, every revision handed on once', async () => {
    await api.relay.drain();
    const revisions = await imageRevisions(30);
    await backlog(2500);
    const due = await pending();
    expect(due).toBe(2500 + 30); // each create: its rollout.revision (a listener's deployment has no provision.deployment)
    const before = await api.queues.rollouts.count();

    const rec = recording();
    const sent = await relayOf(rec.hook, { batchSize: 50, maxBatchSize: 400, concurrency: 3 }).drain();

    expect(sent).toBe(due);
    expect(await pending()).toBe(0);
    expect(rec.handed.size).toBe(due);
    expect([...rec.handed.values()].filter((n) => n !== 1)).toEqual([]);
    expect(rec.batches[0]).toBe(50);
    expect(Math.max(...rec.batches)).toBe(400);
    expect(rec.maxInFlight()).toBeGreaterThan(1);
    expect(rec.maxInFlight()).toBeLessThanOrEqual(3);
    expect(await api.queues.rollouts.count()).toBe(before + due);
    const moved = await api.dataSource.query(
      `SELECT r.status, (SELECT count(*)::int FROM revision_events e WHERE e.revision_id = r.id ` +
        `AND e.to_status = 'AWAITING_DEPLOY') AS events
         FROM revisions r WHERE r.id = ANY($1::uuid[])`,
      [revisions],
    );
    expect(moved).toHaveLength(30);
    expect(
      moved.filter((r: { status: string; events: number }) => r.status !== 'AWAITING_DEPLOY' || r.events !== 1),
    ).toEqual([]);
  });

  it('two relays draining at once (two processes) never hand the same row twice', async () => {
    await backlog(2000);
    const rec = recording();
    const options = { batchSize: 50, maxBatchSize: 400, concurrency: 2 };
    const [a, b] = await Promise.all([relayOf(rec.hook, options).drain(), relayOf(rec.hook, options).drain()]);
    expect(a + b).toBe(2000);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    expect(await pending()).toBe(0);
    expect(rec.handed.size).toBe(2000);
    expect([...rec.handed.values()].filter((n) => n !== 1)).toEqual([]);
  });
});

describe('while Redis refuses jobs', () => {
  let proxy: TcpProxy;
  let redis: Redis;
  let queues: Queues;

  beforeAll(async () => {
    proxy = await TcpProxy.start(inject('redisUrl'), 6379);
    redis = producerConnection(proxy.urlFor(inject('redisUrl')), logger);
    queues = createQueues(redis, api.config.queuePrefix, logger);
    await ready(redis);
  });
  afterAll(async () => {
    await closeQueues(queues);
    redis?.disconnect();
    await proxy?.close();
  });

  const rows = () =>
    api.dataSource.query(
      `SELECT id, job_name, attempts, available_at >= created_at + interval '500 milliseconds' AS backing_off, ` +
        `available_at = 'infinity' AS parked, sent_at IS NOT NULL AS sent, last_error
         FROM outbox WHERE sent_at IS NULL OR sent_at > now() - interval '1 minute' ORDER BY id`,
    );

  it(
    'the backlog waits in order; once Redis takes jobs again every row goes out, the one backing off too, ' +
      'and a bad row is parked',
    async () => {
      await api.relay.drain();
      await backlog(100);
      await api.dataSource.query(
        `INSERT INTO outbox (queue, job_name, job_id, payload) VALUES ('rollouts', 'no.such.job', 'bad-1', '{}')`,
      );
      await backlog(100);
      const relay = relayOf(recording().hook, { batchSize: 20, maxBatchSize: 80, concurrency: 3 }, queues);

      await proxy.refuse();
      expect(await relay.drain()).toBe(0);
      const waiting = (await rows()).filter((r: { sent: boolean }) => !r.sent);
      expect(waiting).toHaveLength(201);
      // The first row was refused and backs off; nothing after it was tried.
      expect(waiting[0]).toMatchObject({ attempts: 1, backing_off: true });
      expect(waiting.slice(1).filter((r: { attempts: number }) => r.attempts !== 0)).toEqual([]);
      // As after a long outage: its backoff has grown to the longest.
      await api.dataSource.query(`UPDATE outbox SET available_at = now() + interval '30 seconds' WHERE id = $1`, [
        waiting[0].id,
      ]);

      await proxy.restore();
      await ready(redis);
      await relay.drain();
      const after = await rows();
      expect(after.filter((r: { sent: boolean; job_name: string }) => !r.sent && r.job_name !== 'no.such.job')).toEqual(
        [],
      );
      expect(after.find((r: { job_name: string }) => r.job_name === 'no.such.job')).toMatchObject({
        sent: false,
        parked: true,
        last_error: 'unknown job name',
      });
    },
  );

  it('a running relay goes again as soon as the connection is back, not at its next poll', async () => {
    await backlog(300);
    await proxy.refuse();
    const relay = relayOf(
      recording().hook,
      { batchSize: 20, maxBatchSize: 80, pollMs: 60_000, idlePollMs: 60_000 },
      queues,
    );
    relay.start();
    try {
      await expect
        .poll(
          async () =>
            (await rows()).filter((r: { attempts: number; sent: boolean }) => !r.sent && r.attempts > 0).length,
        )
        .toBeGreaterThan(0);
      await proxy.restore();
      await expect
        .poll(
          async () => (await rows()).filter((r: { sent: boolean; parked: boolean }) => !r.sent && !r.parked).length,
          { timeout: 10_000 },
        )
        .toBe(0);
    } finally {
      await relay.stop();
    }
  });
});

describe('the outbox notification', () => {
  /** Notifications on OUTBOX_CHANNEL seen by a listening connection while `work` runs, plus a moment for late ones. */
  async function notificationsDuring(work: () => Promise<unknown>): Promise<number> {
    const client = new pg.Client({ connectionString: api.database.url });
    client.on('error', () => undefined);
    await client.connect();
    let seen = 0;
    client.on('notification', (n) => {
      if (n.channel === OUTBOX_CHANNEL) seen++;
    });
    try {
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      await work();
      // A notification is sent at commit; this round trip on the listening connection comes after it.
      await new Promise((r) => setTimeout(r, 200));
      await client.query('SELECT 1');
      return seen;
    } finally {
      await client.end();
    }
  }

  const job = () => outboxJob('provision.deployment', { deploymentId: randomUUID() });

  it('wakes relays once per committed transaction that recorded jobs, a create recording them inside its revision insert too', async () => {
    expect(
      await notificationsDuring(() => api.dataSource.transaction((m) => enqueueAllInOutbox(m, [job(), job()]))),
    ).toBe(1);
    expect(await notificationsDuring(() => imageRevisions(1))).toBe(1);
  });

  it('says nothing for a transaction that rolled back, or that recorded no job', async () => {
    const rolledBack = notificationsDuring(() =>
      api.dataSource
        .transaction(async (m) => {
          await enqueueAllInOutbox(m, [job()]);
          throw new Error('rolled back');
        })
        .catch(() => undefined),
    );
    expect(await rolledBack).toBe(0);
    expect(await notificationsDuring(() => api.dataSource.transaction((m) => m.query('SELECT 1')))).toBe(0);
  });
});
