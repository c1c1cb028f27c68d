import type { Config } from '@slipway/config';
import { EVENTS_CHANNEL, type DataSource } from '@slipway/db';
import { createJobConsumer, JOB_CATALOG, OUTBOX_CHANNEL, OutboxRelay, QUEUES, type Queues } from '@slipway/jobs';
import { startHealthPort, type Logger } from '@slipway/logging';
import { Reconciler, Retention } from '@slipway/pipeline';
import { createWebhookWorker, WebhookFanout } from '@slipway/webhooks';
import { PreviewFeedback } from './preview-feedback.js';
import type { WorkerMetrics } from './worker-metrics.js';
import type { WorkerRole } from './worker-process.js';

/**
 * The `maintenance` worker, running the reconciler and retention, and their schedules. Hosted by
 * every worker process: any live one can reconcile, so one crashed process never stops recovery.
 */
export const maintenanceRole: WorkerRole = {
  name: 'maintenance',
  workers: ({ config, dataSource, queues, flow, workerRedis, log }) => {
    const reconciler = new Reconciler(dataSource, queues, flow, config.pipeline, log);
    const retention = new Retention(dataSource, config, log);
    return [
      createJobConsumer({
        queue: QUEUES.maintenance,
        handlers: {
          'reconcile.tick': async () => void (await reconciler.run()),
          'retention.prune': async () => void (await retention.run()),
        },
        connection: workerRedis,
        prefix: config.queuePrefix,
        concurrency: 1,
        log,
      }),
    ];
  },
  start: ({ queues, config, log }) => scheduleMaintenance(queues, config, log),
};

/**
 * Outbound webhooks: the `webhooks` worker sending deliveries and the fan-out writing them, woken
 * by new events. Hosted by every worker process, likewise, so one crashed process never stops
 * deliveries.
 */
export const webhookDeliveryRole: WorkerRole = {
  name: 'webhooks',
  channels: [EVENTS_CHANNEL],
  workers: ({ config, dataSource, workerRedis, secrets, log }) => [
    createWebhookWorker({ config, dataSource, connection: workerRedis, secrets, log }),
  ],
  start: async ({ config, dataSource, log, notifications }) => {
    const fanout = new WebhookFanout(dataSource, log, config.webhooks.fanoutPollMs, notifications);
    fanout.start();
    return { name: 'webhook fan-out', stop: () => fanout.stop() };
  },
};

/**
 * Pull requests told about their previews (commit statuses, one comment): hosted by every
 * worker process; each preview's report is locked, so one process tells it once.
 */
export const previewFeedbackRole: WorkerRole = {
  name: 'preview feedback',
  start: async ({ config, dataSource, secrets, log, flow }) => {
    const feedback = new PreviewFeedback(
      config,
      dataSource,
      secrets,
      log.child({ component: 'preview-feedback' }),
      flow,
    );
    feedback.start();
    return { name: 'preview feedback', stop: () => feedback.stop() };
  },
};

/** An outbox relay: workers write outbox rows too (a build hands its revision on to `rollouts`). */
export const outboxRelayRole: WorkerRole = {
  name: 'outbox relay',
  channels: [OUTBOX_CHANNEL],
  start: async ({ dataSource, queues, log, flow, notifications }) => {
    const relay = new OutboxRelay(dataSource, queues, log, flow, { notifications });
    relay.start();
    return { name: 'outbox relay', stop: () => relay.stop() };
  },
};

/** The health port, when `SLIPWAY_WORKER_HEALTH_PORT` sets one. */
export const healthPortRole: WorkerRole = {
  name: 'health port',
  start: async ({ config, dataSource, metrics, log }) => {
    if (!config.workerHealthPort) return;
    // Ready while Postgres answers: without it a worker can claim nothing.
    const ready = () =>
      dataSource.query('SELECT 1').then(
        () => true,
        () => false,
      );
    const server = startHealthPort({ port: config.workerHealthPort, ready, registry: metrics.registry, log });
    return { name: 'health', stop: () => new Promise((r) => server.close(r)) };
  },
};

/**
 * One repeatable reconcile job and one retention job for the whole system: every worker process
 * upserts the same schedulers (idempotent), so the schedules survive any single process.
 */
async function scheduleMaintenance(queues: Queues, config: Readonly<Config>, log: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await queues.maintenance.upsertJobScheduler(
        'reconcile',
        { every: config.pipeline.reconcileIntervalMs },
        { name: 'reconcile.tick', data: {}, opts: JOB_CATALOG['reconcile.tick'].options },
      );
      await queues.maintenance.upsertJobScheduler(
        'retention',
        { every: config.retention.intervalMs },
        { name: 'retention.prune', data: {}, opts: JOB_CATALOG['retention.prune'].options },
      );
      return;
    } catch (err) {
      if (attempt >= 30) throw err;
      log.warn({ err }, 'could not schedule the reconciler yet (Redis?); retrying');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
}
