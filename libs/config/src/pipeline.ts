/**
 * How revisions move and how long things are kept (docs/configuration.md, Pipeline; Webhooks;
 * Retention): phase deadlines, heartbeats, the reconciler, webhook deliveries, the retention pass.
 */
import { int, ms, type ValuesOf } from './setting.js';

const MINUTE = 60_000;

/** Phase deadlines and reconciler periods (docs/api.md, Statuses), all in milliseconds. */
export const pipelineSettings = {
  /** A started revision must reach Redis within this (else CREATE_FAILED). */
  enqueueDeadlineMs: ms(
    'SLIPWAY_ENQUEUE_DEADLINE_MS',
    10 * MINUTE,
    'a started revision must reach the queue within this (else `CREATE_FAILED`)',
  ),
  buildDeadlineMs: ms(
    'SLIPWAY_BUILD_DEADLINE_MS',
    30 * MINUTE,
    'a build must finish within this (else `BUILD_FAILED`)',
  ),
  rolloutDeadlineMs: ms(
    'SLIPWAY_ROLLOUT_DEADLINE_MS',
    10 * MINUTE,
    'a rollout must become healthy within this (else `DEPLOY_FAILED`)',
  ),
  teardownDeadlineMs: ms(
    'SLIPWAY_TEARDOWN_DEADLINE_MS',
    10 * MINUTE,
    "how long a deletion waits for a listener's confirmation",
  ),
  /** A worker refreshes its revision's heartbeat this often… */
  heartbeatIntervalMs: ms(
    'SLIPWAY_HEARTBEAT_INTERVAL_MS',
    5_000,
    "how often a worker refreshes its revision's heartbeat",
  ),
  /** …and a heartbeat older than this means the worker died. */
  heartbeatStaleMs: ms(
    'SLIPWAY_HEARTBEAT_STALE_MS',
    30_000,
    'a heartbeat older than this means its worker died (the phase is re-enqueued)',
  ),
  reconcileIntervalMs: ms('SLIPWAY_RECONCILE_INTERVAL_MS', 10_000, 'reconciler period'),
  /** A listener silent this long turns its deployments UNKNOWN. */
  listenerSilenceMs: ms(
    'SLIPWAY_LISTENER_SILENCE_MS',
    5 * MINUTE,
    'a listener silent this long turns its deployments `UNKNOWN`',
  ),
  /** A deployment without activity this long turns UNUSED. */
  idleAfterMs: ms(
    'SLIPWAY_IDLE_AFTER_MS',
    28 * 24 * 60 * MINUTE,
    'a deployment without activity this long turns `UNUSED`',
    '28 days',
  ),
  /** How many times a phase is re-enqueued after its worker died, before the revision fails. */
  maxPhaseAttempts: int(
    'SLIPWAY_MAX_PHASE_ATTEMPTS',
    3,
    're-enqueues of a phase whose worker died, before the revision fails',
    { min: 1, max: 20 },
  ),
};

export type PipelineTimings = ValuesOf<typeof pipelineSettings>;

/** Outbound webhook deliveries (docs/api.md, Events and webhooks). */
export const webhookSettings = {
  /** First retry after this; each next one waits twice as long (15 attempts span about a day at 5 s). */
  retryBaseMs: int(
    'SLIPWAY_WEBHOOK_RETRY_BASE_MS',
    5_000,
    'first retry of a failed outbound webhook delivery; each next wait doubles (15 attempts, about a day)',
    { min: 1 },
  ),
  /** A receiver must answer within this. */
  timeoutMs: int('SLIPWAY_WEBHOOK_TIMEOUT_MS', 10_000, 'a webhook receiver must answer (2xx) within this', {
    min: 100,
  }),
  /** How often the fan-out looks for new events when no notification woke it. */
  fanoutPollMs: int(
    'SLIPWAY_WEBHOOK_FANOUT_POLL_MS',
    5_000,
    'how often the webhook fan-out looks for new events when no notification woke it',
    {
      min: 10,
    },
  ),
};

/** How often the retention pass runs and how long finished rows are kept. */
export const retentionSettings = {
  intervalMs: int('SLIPWAY_RETENTION_INTERVAL_MS', 10 * MINUTE, 'how often the retention pass runs', { min: 1000 }),
  /** Events (the event feed) older than this are deleted. */
  eventsDays: int('SLIPWAY_RETENTION_EVENTS_DAYS', 30, 'events older than this many days are deleted', { min: 1 }),
  /** Outbox rows sent longer ago than this are deleted. */
  outboxHours: int(
    'SLIPWAY_RETENTION_OUTBOX_HOURS',
    24,
    'outbox rows sent longer ago than this many hours are deleted',
    { min: 1 },
  ),
  /** Completed uploads no revision names are deleted after this many days. */
  uploadsUnusedDays: int(
    'SLIPWAY_RETENTION_UNUSED_UPLOAD_DAYS',
    7,
    'completed uploads no revision names are deleted after this many days (abandoned ones a day after their URL expired)',
    { min: 1 },
  ),
};

export type RetentionSettings = ValuesOf<typeof retentionSettings>;
