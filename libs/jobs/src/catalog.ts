import Joi from 'joi';
import type { JobsOptions } from 'bullmq';

/**
 * Queue names (kebab-case). `builds` is worked by builder processes and `rollouts` by deployer
 * processes; `maintenance` and `webhooks` by every worker process of either kind (each main.ts
 * lists the maintenance and webhook delivery roles of `@slipway/worker`), so one crashed process
 * never stops recovery or deliveries.
 */
export const QUEUES = {
  builds: 'builds',
  rollouts: 'rollouts',
  maintenance: 'maintenance',
  webhooks: 'webhooks',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Payloads carry ids only: workers reload the rows and never see state or secrets. */
export interface RevisionJob {
  revisionId: string;
  /** Which (re-)enqueue of this revision's phase this is; part of the job id. */
  attempt: number;
  requestId?: string;
}

export interface DeploymentJob {
  deploymentId: string;
  requestId?: string;
}

export type ReconcileJob = Record<string, never>;
export type RetentionJob = Record<string, never>;

export interface WebhookDeliveryJob {
  deliveryId: string;
  /** 0 for the first round, one more for every redelivery; part of the job id. */
  round: number;
}

export interface JobPayloads {
  'build.revision': RevisionJob;
  'rollout.revision': RevisionJob;
  'provision.deployment': DeploymentJob;
  'teardown.deployment': DeploymentJob;
  'reconcile.tick': ReconcileJob;
  'retention.prune': RetentionJob;
  'deliver.webhook': WebhookDeliveryJob;
}

export type JobName = keyof JobPayloads;

/** Which queue carries each job: literal types, so a worker's handler map is checked at compile time. */
export const JOB_QUEUES = {
  'build.revision': 'builds',
  'rollout.revision': 'rollouts',
  'provision.deployment': 'rollouts',
  'teardown.deployment': 'rollouts',
  'reconcile.tick': 'maintenance',
  'retention.prune': 'maintenance',
  'deliver.webhook': 'webhooks',
} as const satisfies Record<JobName, QueueName>;

/** The job names carried by queue `Q`. */
export type JobsOn<Q extends QueueName> = { [N in JobName]: (typeof JOB_QUEUES)[N] extends Q ? N : never }[JobName];

export interface CatalogEntry<N extends JobName> {
  queue: (typeof JOB_QUEUES)[N];
  schema: Joi.ObjectSchema;
  /** Deterministic id: enqueueing the same work twice is a no-op (no `:`, never all digits). */
  jobId: (payload: JobPayloads[N]) => string;
  options: JobsOptions;
}

/** Attempts per delivery round (docs/api.md, Events and webhooks). */
export const WEBHOOK_ATTEMPTS = 15;

const requestId = Joi.string().max(128);
const revisionJob = Joi.object({
  revisionId: Joi.string().guid().required(),
  attempt: Joi.number().integer().min(0).required(),
  requestId,
});
const deploymentJob = Joi.object({ deploymentId: Joi.string().guid().required(), requestId });

/**
 * Work with side effects runs once per job (`attempts: 1`): retries belong to the revision
 * and are decided by the reconciler, which can see the database (docs/architecture.md, Rules).
 */
const once: JobsOptions = {
  attempts: 1,
  removeOnComplete: { age: 24 * 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
};

export const JOB_CATALOG: { [N in JobName]: CatalogEntry<N> } = {
  'build.revision': {
    queue: JOB_QUEUES['build.revision'],
    schema: revisionJob,
    jobId: (p) => `build-${p.revisionId}-a${p.attempt}`,
    options: once,
  },
  'rollout.revision': {
    queue: JOB_QUEUES['rollout.revision'],
    schema: revisionJob,
    jobId: (p) => `rollout-${p.revisionId}-a${p.attempt}`,
    options: once,
  },
  'provision.deployment': {
    queue: JOB_QUEUES['provision.deployment'],
    schema: deploymentJob,
    jobId: (p) => `provision-${p.deploymentId}`,
    options: { ...once, attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  },
  'teardown.deployment': {
    queue: JOB_QUEUES['teardown.deployment'],
    schema: deploymentJob,
    jobId: (p) => `teardown-${p.deploymentId}`,
    options: { ...once, attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  },
  'reconcile.tick': {
    queue: JOB_QUEUES['reconcile.tick'],
    schema: Joi.object({}),
    jobId: () => 'reconcile-tick',
    options: { attempts: 1, removeOnComplete: { count: 50 }, removeOnFail: { count: 200 } },
  },
  'retention.prune': {
    queue: JOB_QUEUES['retention.prune'],
    schema: Joi.object({}),
    jobId: () => 'retention-prune',
    options: { attempts: 1, removeOnComplete: { count: 50 }, removeOnFail: { count: 200 } },
  },
  'deliver.webhook': {
    queue: JOB_QUEUES['deliver.webhook'],
    schema: Joi.object({ deliveryId: Joi.string().guid().required(), round: Joi.number().integer().min(0).required() }),
    jobId: (p) => `webhook-${p.deliveryId}-r${p.round}`,
    // A delivery has no side effect here, so BullMQ retries it: 15 attempts, the waits doubling
    // from SLIPWAY_WEBHOOK_RETRY_BASE_MS (the worker's `webhook` backoff): about a day at 5 s.
    options: {
      attempts: WEBHOOK_ATTEMPTS,
      backoff: { type: 'webhook' },
      removeOnComplete: { age: 24 * 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
    },
  },
};

/** Validates a payload against its catalog schema; workers call this before doing anything. */
export function parsePayload<N extends JobName>(name: N, data: unknown): JobPayloads[N] {
  const { value, error } = JOB_CATALOG[name].schema.validate(data, { stripUnknown: true });
  if (error) throw new Error(`Invalid ${name} payload: ${error.message}`);
  return value as JobPayloads[N];
}

export const isJobName = (name: string): name is JobName => Object.prototype.hasOwnProperty.call(JOB_CATALOG, name);

/** The job names a queue carries: a worker must handle exactly these. */
export function jobsOf(queue: QueueName): JobName[] {
  return (Object.keys(JOB_CATALOG) as JobName[]).filter((n) => JOB_CATALOG[n].queue === queue);
}
