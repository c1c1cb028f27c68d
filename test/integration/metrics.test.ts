import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiNotifications, createApp } from '@slipway/api/app';
import { RevisionEventsCollector } from '../../services/api/src/metrics/revision-events.collector.js';
import { closeQueues, createQueues, producerConnection } from '@slipway/jobs';
import { createLogger } from '@slipway/logging';
import { HttpClient } from '../support/http.js';
import { LogCapture } from '../support/log-capture.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (the subset prom-client writes) into samples. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    expect(match, `unparseable metrics line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    for (const [, key, value] of match![2]?.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) ?? [])
      labels[key!] = value!;
    samples.push({ name: match![1]!, labels, value: Number(match![3]) });
  }
  return samples;
}

/** The value of the one sample with this name whose labels include `labels`; 0 when absent. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(found.length, `${name} ${JSON.stringify(labels)} matches at most one sample`).toBeLessThanOrEqual(1);
  return found[0]?.value ?? 0;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

let api: TestApi;

async function scrape(http: HttpClient = api.http, path = '/metrics'): Promise<Sample[]> {
  const res = await http.get(path, { key: null });
  expect(res.status).toBe(200);
  return parse(res.text);
}

/** A deployment and a revision to hang events on (the events table has a foreign key). */
async function revision(): Promise<{ deploymentId: string; revisionId: string }> {
  const deploymentId = randomUUID();
  const revisionId = randomUUID();
  await api.dataSource.query(
    `INSERT INTO deployments (id, workspace_id, name, source, status, resource_spec)
     VALUES ($1, $2, $3, 'external_container', 'READY', '{}')`,
    [deploymentId, api.workspaceId, `metrics-${deploymentId.slice(0, 8)}`],
  );
  await api.dataSource.query(
    `INSERT INTO revisions (id, deployment_id, status, source, resource_spec) VALUES ($1, $2, 'DEPLOYED', 'external_container', '{}')`,
    [revisionId, deploymentId],
  );
  return { deploymentId, revisionId };
}

type Event = [from: string | null, to: string, timeInStatusMs: number | null];

const INSERT_EVENT = `INSERT INTO revision_events (revision_id, deployment_id, from_status, to_status, time_in_status_ms)
                      VALUES ($1, $2, $3, $4, $5)`;

async function insertEvents(events: Event[]): Promise<void> {
  const { deploymentId, revisionId } = await revision();
  for (const [from, to, ms] of events)
    await api.dataSource.query(INSERT_EVENT, [revisionId, deploymentId, from, to, ms]);
}

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

describe('GET /metrics', () => {
  it('answers the Prometheus text format without a key, under both prefixes', async () => {
    for (const path of ['/metrics', '/api-host/metrics']) {
      const res = await api.http.get(path, { key: null });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.text).toContain('# TYPE slipway_http_request_duration_seconds histogram');
      expect(res.text).toContain('# TYPE slipway_queue_jobs gauge');
      expect(res.text).toContain('# TYPE slipway_revision_transitions_total counter');
      expect(res.text).toContain('# TYPE slipway_revision_time_in_status_seconds histogram');
      // Node process defaults, under our prefix.
      expect(res.text).toMatch(/^slipway_process_cpu_user_seconds_total \d/m);
      expect(res.text).toMatch(/^slipway_nodejs_heap_size_used_bytes \d/m);
      expect(res.text).not.toMatch(/^process_cpu_user_seconds_total/m);
      parse(res.text);
    }
  });

  it('answers other methods with 405 and stays out of the OpenAPI document', async () => {
    const res = await api.http.post('/metrics', {}, { key: null });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.body).toEqual({ detail: 'Method Not Allowed' });
    const doc = (await api.http.get('/openapi.json', { key: null })).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/metrics') || p.startsWith('/admin'))).toEqual([]);
  });

  it('times requests by method, route pattern and status, never by raw URL', async () => {
    const before = await scrape();
    const ids = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    expect((await api.http.get(`/v2/listeners/${ids[0]}`)).status).toBe(404);
    expect((await api.http.get(`/api-host/v2/listeners/${ids[1]}`)).status).toBe(404);
    expect((await api.http.get(`/v2/listeners/${ids[2]}`, { key: null })).status).toBe(401);
    expect((await api.http.get('/v2/listeners')).status).toBe(200);
    expect((await api.http.get(`/no/such/${ids[3]}`)).status).toBe(404);
    expect((await api.http.get('/docs/', { key: null })).status).toBe(200);
    const after = await scrape();

    const count = 'slipway_http_request_duration_seconds_count';
    const delta = (labels: Record<string, string>) => valueOf(after, count, labels) - valueOf(before, count, labels);
    // Both prefixes are the same operation: one series.
    expect(delta({ method: 'GET', route: '/v2/listeners/:listener_id', status_code: '404' })).toBe(2);
    expect(delta({ method: 'GET', route: '/v2/listeners/:listener_id', status_code: '401' })).toBe(1);
    expect(delta({ method: 'GET', route: '/v2/listeners', status_code: '200' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status_code: '404' })).toBe(1);
    expect(delta({ method: 'GET', route: '/docs', status_code: '200' })).toBe(1);
    // The scrape before this one was timed too, under its mount.
    expect(valueOf(after, count, { method: 'GET', route: '/metrics', status_code: '200' })).toBeGreaterThan(0);
    // Histogram buckets are cumulative: +Inf holds every sample.
    expect(
      valueOf(after, 'slipway_http_request_duration_seconds_bucket', {
        method: 'GET',
        route: '/v2/listeners/:listener_id',
        status_code: '404',
        le: '+Inf',
      }),
    ).toBe(valueOf(after, count, { method: 'GET', route: '/v2/listeners/:listener_id', status_code: '404' }));

    const routes = new Set(after.filter((s) => s.name === count).map((s) => s.labels.route));
    for (const route of routes) {
      expect(route, 'a route label').not.toMatch(UUID);
      expect(route!.startsWith('/api-host'), route).toBe(false);
    }
    for (const sample of after) {
      for (const value of Object.values(sample.labels)) expect(value, `${sample.name} label`).not.toMatch(UUID);
    }
  });
});

describe('queue gauges', () => {
  it('reports every state of every queue, read from Redis at scrape time', async () => {
    const samples = await scrape();
    for (const queue of ['builds', 'rollouts', 'maintenance', 'webhooks']) {
      expect(valueOf(samples, 'slipway_queue_up', { queue })).toBe(1);
      const states = samples
        .filter((s) => s.name === 'slipway_queue_jobs' && s.labels.queue === queue)
        .map((s) => s.labels.state);
      expect(states.sort()).toEqual([
        'active',
        'completed',
        'delayed',
        'failed',
        'paused',
        'prioritized',
        'waiting',
        'waiting-children',
      ]);
    }

    // A delayed job nothing will consume (no worker runs on this file's prefix).
    const job = await api.queues.builds.add(
      'build.revision',
      { revisionId: randomUUID(), attempt: 0 },
      { delay: 3_600_000, jobId: `build-metrics-${randomUUID()}` },
    );
    const after = await scrape();
    expect(valueOf(after, 'slipway_queue_jobs', { queue: 'builds', state: 'delayed' })).toBe(1);
    expect(valueOf(after, 'slipway_queue_jobs', { queue: 'rollouts', state: 'delayed' })).toBe(0);
    await job.remove();
    expect(valueOf(await scrape(), 'slipway_queue_jobs', { queue: 'builds', state: 'delayed' })).toBe(0);
  });

  it("reports a paused queue's waiting jobs as paused (BullMQ 6 keeps them in waiting)", async () => {
    const rollouts = api.queues.rollouts;
    await rollouts.pause();
    try {
      await rollouts.add(
        'rollout.revision',
        { revisionId: randomUUID(), attempt: 0 },
        { jobId: `rollout-metrics-${randomUUID()}` },
      );
      const paused = await scrape();
      expect(valueOf(paused, 'slipway_queue_jobs', { queue: 'rollouts', state: 'paused' })).toBe(1);
      expect(valueOf(paused, 'slipway_queue_jobs', { queue: 'rollouts', state: 'waiting' })).toBe(0);
    } finally {
      await rollouts.resume();
    }
    const resumed = await scrape();
    expect(valueOf(resumed, 'slipway_queue_jobs', { queue: 'rollouts', state: 'paused' })).toBe(0);
    expect(valueOf(resumed, 'slipway_queue_jobs', { queue: 'rollouts', state: 'waiting' })).toBe(1);
    await rollouts.drain();
  });

  it('still answers 200 when Redis is down, with queue_up 0 and no job samples', async () => {
    const logger = createLogger({ name: 'api', level: 'debug', destination: new LogCapture() });
    // Nothing listens on port 1: every connection attempt is refused.
    const deadRedis = producerConnection('redis://127.0.0.1:1', logger);
    const deadQueues = createQueues(deadRedis, api.config.queuePrefix, logger);
    const app = createApp({
      config: api.config,
      dataSource: api.dataSource,
      redis: deadRedis,
      queues: deadQueues,
      logger,
      notifications: apiNotifications(api.config, logger),
    });
    const server: Server = app.express.listen(0, '127.0.0.1');
    try {
      await new Promise<void>((resolve) => server.once('listening', resolve));
      const http = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, null);
      const samples = await scrape(http);
      for (const queue of ['builds', 'rollouts', 'maintenance', 'webhooks'])
        expect(valueOf(samples, 'slipway_queue_up', { queue })).toBe(0);
      expect(samples.filter((s) => s.name === 'slipway_queue_jobs')).toEqual([]);
      // The rest of the scrape is intact.
      expect(samples.some((s) => s.name === 'slipway_process_cpu_user_seconds_total')).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeQueues(deadQueues);
      deadRedis.disconnect();
    }
  });
});

describe('revision transitions from revision_events', () => {
  const transitions = 'slipway_revision_transitions_total';
  const timeCount = 'slipway_revision_time_in_status_seconds_count';
  const timeSum = 'slipway_revision_time_in_status_seconds_sum';

  it('counts rows written after the previous scrape, by any process, exactly once', async () => {
    const before = await scrape();
    await insertEvents([
      ['AWAITING_BUILD', 'BUILDING', 500],
      ['BUILDING', 'AWAITING_DEPLOY', 65_000],
      ['AWAITING_BUILD', 'BUILDING', 1_500],
      [null, 'CREATING', null],
    ]);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);

    expect(delta(transitions, { from: 'AWAITING_BUILD', to: 'BUILDING' })).toBe(2);
    expect(delta(transitions, { from: 'BUILDING', to: 'AWAITING_DEPLOY' })).toBe(1);
    expect(delta(transitions, { from: 'none', to: 'CREATING' })).toBe(1);
    // One observation per status left, in seconds; a first event (no previous status) has none.
    expect(delta(timeCount, { status: 'AWAITING_BUILD' })).toBe(2);
    expect(delta(timeSum, { status: 'AWAITING_BUILD' })).toBeCloseTo(2, 6);
    expect(delta(timeCount, { status: 'BUILDING' })).toBe(1);
    expect(delta(timeSum, { status: 'BUILDING' })).toBeCloseTo(65, 6);
    expect(delta('slipway_revision_time_in_status_seconds_bucket', { status: 'AWAITING_BUILD', le: '1' })).toBe(1);
    expect(after.some((s) => s.name === timeCount && s.labels.status === 'none')).toBe(false);

    // Scraping again observes nothing new.
    const again = await scrape();
    const same = { from: 'AWAITING_BUILD', to: 'BUILDING' };
    expect(valueOf(again, transitions, same)).toBe(valueOf(after, transitions, same));
    expect(valueOf(again, timeCount, { status: 'AWAITING_BUILD' })).toBe(
      valueOf(after, timeCount, { status: 'AWAITING_BUILD' }),
    );
  });

  it('counts a row whose transaction commits after a later id was already read', async () => {
    const labels = { from: 'DEPLOYING', to: 'DEPLOYED' };
    const before = valueOf(await scrape(), transitions, labels);
    const { deploymentId, revisionId } = await revision();

    const runner = api.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      // Takes the lower id, but stays invisible until the commit below.
      await runner.query(INSERT_EVENT, [revisionId, deploymentId, 'DEPLOYING', 'DEPLOYED', 10]);
      await api.dataSource.query(INSERT_EVENT, [revisionId, deploymentId, 'DEPLOYING', 'DEPLOYED', 20]);
      expect(valueOf(await scrape(), transitions, labels) - before).toBe(1);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    expect(valueOf(await scrape(), transitions, labels) - before).toBe(2);
    expect(valueOf(await scrape(), transitions, labels) - before).toBe(2);
  });

  it('does not count twice when scrapes overlap', async () => {
    const labels = { from: 'BUILDING', to: 'BUILD_FAILED' };
    const before = valueOf(await scrape(), transitions, labels);
    await insertEvents([['BUILDING', 'BUILD_FAILED', 100]]);
    const results = await Promise.all([scrape(), scrape(), scrape(), scrape()]);
    for (const samples of results) expect(valueOf(samples, transitions, labels) - before).toBeLessThanOrEqual(1);
    expect(valueOf(await scrape(), transitions, labels) - before).toBe(1);
  });

  it("starts a new process's count at the current end of the table, so history is not counted again", async () => {
    const labels = { from: 'AWAITING_DEPLOY', to: 'DEPLOYING' };
    await insertEvents([['AWAITING_DEPLOY', 'DEPLOYING', 1_000]]);
    // A second api process over the same database, scraped for the first time.
    const logger = createLogger({ name: 'api', level: 'debug', destination: new LogCapture() });
    const redis = producerConnection(api.config.redisUrl, logger);
    const queues = createQueues(redis, api.config.queuePrefix, logger);
    const app = createApp({
      config: api.config,
      dataSource: api.dataSource,
      redis,
      queues,
      logger,
      notifications: apiNotifications(api.config, logger),
    });
    const server: Server = app.express.listen(0, '127.0.0.1');
    try {
      await new Promise<void>((resolve) => server.once('listening', resolve));
      const http = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, null);
      expect(valueOf(await scrape(http), transitions, labels)).toBe(0);
      await insertEvents([['AWAITING_DEPLOY', 'DEPLOYING', 1_000]]);
      expect(valueOf(await scrape(http), transitions, labels)).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeQueues(queues);
      redis.disconnect();
    }
  });

  it('reads a backlog in batches', async () => {
    const registry = new Registry();
    const logger = createLogger({ name: 'api', level: 'debug', destination: new LogCapture() });
    const collector = new RevisionEventsCollector(registry, api.dataSource, logger, { batchSize: 2 });
    await collector.collect();
    await insertEvents(Array.from({ length: 5 }, (): Event => ['QUEUED', 'INTERRUPTED', 250]));
    await collector.collect();
    const samples = parse(await registry.metrics());
    expect(valueOf(samples, transitions, { from: 'QUEUED', to: 'INTERRUPTED' })).toBe(5);
    expect(valueOf(samples, timeSum, { status: 'QUEUED' })).toBeCloseTo(1.25, 6);
  });

  it('reads ids in numeric order across 999 → 1000, so a batch boundary there skips none', async () => {
    const registry = new Registry();
    const logger = createLogger({ name: 'api', level: 'debug', destination: new LogCapture() });
    const collector = new RevisionEventsCollector(registry, api.dataSource, logger, { batchSize: 2 });
    const [{ last }] = await api.dataSource.query(`SELECT last_value::int AS last FROM revision_events_id_seq`);
    const boundary = 10 ** String(Math.max(last, 10)).length;
    await api.dataSource.query(`SELECT setval('revision_events_id_seq', $1)`, [boundary - 3]);
    await collector.collect();
    await insertEvents(Array.from({ length: 6 }, (): Event => ['AWAITING_DEPLOY', 'DEPLOY_FAILED', 100]));
    await collector.collect();
    expect(
      valueOf(parse(await registry.metrics()), transitions, { from: 'AWAITING_DEPLOY', to: 'DEPLOY_FAILED' }),
    ).toBe(6);
  });
});
