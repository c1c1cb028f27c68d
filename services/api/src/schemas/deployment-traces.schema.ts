import Joi from 'joi';
import { listEnvelope, paginationQuery, timestamp, uuid } from './common.schema.js';

export const deploymentTracesQuery = Joi.object({ ...paginationQuery });

/** A trace's summary, as `GET /v2/deployments/{id}/traces` lists it (docs/tracing.md). */
export const deploymentTrace = Joi.object({
  trace_id: uuid().required(),
  root_run_id: uuid()
    .allow(null)
    .required()
    .description('The root run (null until it arrives: only its children were sent so far)'),
  name: Joi.string().allow(null).required().description("The root run's name"),
  status: Joi.string().valid('success', 'error', 'pending').required().description("The root run's status"),
  start_time: timestamp().required().description('When its first run started'),
  end_time: timestamp().allow(null).required().description('When its root run ended; null while pending'),
  latency: Joi.number().allow(null).required().description('end_time − start_time in seconds; null while pending'),
  run_count: Joi.number().integer().required(),
  error_count: Joi.number().integer().required(),
  prompt_tokens: Joi.number().integer().required(),
  completion_tokens: Joi.number().integer().required(),
  total_tokens: Joi.number().integer().required(),
  thread_id: Joi.string()
    .allow(null)
    .required()
    .description(
      'The thread (metadata thread_id, session_id or conversation_id) of its root, else of its first run naming one',
    ),
  revision_id: Joi.string()
    .allow(null)
    .required()
    .description('The revision (metadata revision_id) of its root, else of its first run naming one'),
  session_id: uuid().required().description("The tracing project (the deployment's tracer_session_id)"),
}).id('DeploymentTrace');

export const deploymentTraceList = listEnvelope(deploymentTrace, 'DeploymentTraceList');
