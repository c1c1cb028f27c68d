import Joi from 'joi';
import { DESIRED_ACTIONS, REPORT_LOG_LEVELS, REPORT_MAX_ITEMS, REPORTABLE_STATUSES } from '@slipway/domain';
import { timestamp, uuid } from './common.schema.js';
import { resourceSpec } from './resource-spec.schema.js';

// The protocol's types and constants are @slipway/domain's (listener-protocol.ts), shared with the agent.

const kubernetesObject = Joi.object({
  apiVersion: Joi.string().required(),
  kind: Joi.string().required(),
  metadata: Joi.object({ name: Joi.string().required(), namespace: Joi.string() }).unknown(true).required(),
})
  .unknown(true)
  .id('KubernetesObject')
  .description('A Kubernetes object to apply (or, for `delete`, to delete) with server-side apply');

const desiredSecret = Joi.object({
  name: Joi.string().required(),
  value: Joi.string().allow('').required(),
})
  .id('DesiredSecret')
  .description('A secret with its real value: this response is the only place values appear');

const desiredDeployment = Joi.object({
  deployment_id: uuid().required(),
  name: Joi.string().required(),
  namespace: Joi.string().required().description('Kubernetes namespace every manifest lives in'),
  revision_id: uuid()
    .allow(null)
    .required()
    .description('`apply`: the revision to roll out; `delete`: the active revision (null if none ever served)'),
  action: Joi.string()
    .valid(...DESIRED_ACTIONS)
    .required(),
  image_uri: Joi.string().allow(null).required(),
  resource_spec: resourceSpec.allow(null).required(),
  secrets: Joi.array().items(desiredSecret).required().description('Empty for `delete`'),
  manifests: Joi.array()
    .items(kubernetesObject)
    .required()
    .description('`delete`: the objects to remove, Secrets without data'),
}).id('DesiredDeployment');

export const desiredStateResponse = Joi.object({
  listener_id: uuid().required(),
  generated_at: timestamp().required(),
  deployments: Joi.array().items(desiredDeployment).required(),
}).id('ListenerDesiredState');

const revisionReport = Joi.object({
  revision_id: uuid().required(),
  status: Joi.string()
    .valid(...REPORTABLE_STATUSES)
    .required(),
  message: Joi.string()
    .max(4096)
    .allow('', null)
    .description('Why; stored (secret values redacted) as the revision status_message'),
}).id('RevisionReport');

/** Longest log line an agent may ship; the same bound as the deployer's own log lines. */
export const REPORT_MAX_LOG_LINE = 8_192;

const logLine = Joi.object({
  revision_id: uuid().required(),
  level: Joi.string()
    .valid(...REPORT_LOG_LEVELS)
    .default('info'),
  message: Joi.string().max(REPORT_MAX_LOG_LINE).allow('').required(),
})
  .id('ListenerLogLine')
  .description("One line of a pod's output, stored as a `deploy` log line of the revision (secret values redacted)");

export const reportBody = Joi.object({
  revisions: Joi.array().items(revisionReport).max(REPORT_MAX_ITEMS).default([]),
  logs: Joi.array().items(logLine).max(REPORT_MAX_ITEMS).default([]).description('Pod log lines, oldest first'),
  deleted_deployments: Joi.array()
    .items(uuid())
    .max(REPORT_MAX_ITEMS)
    .default([])
    .description('Deployments in AWAITING_DELETE whose objects the agent removed'),
})
  .required()
  .id('ListenerReport');

const rejection = Joi.object({
  revision_id: uuid(),
  deployment_id: uuid(),
  reason: Joi.string().required(),
})
  .xor('revision_id', 'deployment_id')
  .id('RejectedReport');

export const reportResponse = Joi.object({
  applied: Joi.array().items(uuid()).required().description('Revisions whose reported status was recorded'),
  deleted: Joi.array().items(uuid()).required().description('Deployments whose teardown finished (now gone)'),
  rejected: Joi.array().items(rejection).required().description('Reports that changed nothing, with why'),
}).id('ListenerReportResult');

/** An agent sends back the ETag of the desired state it holds; unchanged → 304. */
export const desiredStateHeaders = Joi.object({
  'if-none-match': Joi.string().max(1024).description('The `ETag` of the desired state the agent already has'),
});
