import Joi from 'joi';
import { timestamp, uuid } from './common.schema.js';

/** The windows `GET /v2/deployments/{id}/metrics` serves and the step of each (seconds). */
export const METRIC_WINDOWS = { '1h': 60, '6h': 300, '24h': 600 } as const;
export type MetricWindow = keyof typeof METRIC_WINDOWS;

export const deploymentMetricsQuery = Joi.object({
  window: Joi.string()
    .valid(...Object.keys(METRIC_WINDOWS))
    .default('1h')
    .description('How far back: 1h (60 s steps), 6h (5 min steps) or 24h (10 min steps)'),
});

export interface DeploymentMetricsQuery {
  window: MetricWindow;
}

const point = Joi.array()
  .items(Joi.number().allow(null))
  .length(2)
  .description('[step start (Unix seconds), value or null]');
const series = Joi.array().items(point).required();
const number = () => Joi.number().allow(null).required();

const SERIES = [
  ['requests', 'Requests answered by the serving proxy in the step'],
  ['errors_4xx', 'Of them, answered 4xx'],
  ['errors_5xx', 'Of them, answered 5xx'],
  ['latency_p50_ms', 'Median time to answer, milliseconds (null: no request)'],
  ['latency_p95_ms', '95th percentile, milliseconds'],
  ['latency_p99_ms', '99th percentile, milliseconds'],
  ['cpu_percent', "The instances' CPU together, percent of one core"],
  ['memory_bytes', "The instances' memory together, highest sample in the step"],
  ['restarts', 'Instance restarts'],
  ['oom_kills', 'Instances killed for running out of memory'],
  ['runs_started', 'Agent-server runs that began executing (first claim)'],
  ['runs_succeeded', 'Agent-server runs that ended successfully'],
  ['runs_failed', 'Agent-server runs that ended in an error or a timeout'],
  [
    'run_duration_p50_ms',
    'Median run duration from claim to final status, milliseconds, approximate (null: no run ended)',
  ],
] as const;

export const deploymentMetricsResponse = Joi.object({
  window: Joi.string()
    .valid(...Object.keys(METRIC_WINDOWS))
    .required(),
  step_seconds: Joi.number().integer().required(),
  series: Joi.object(
    Object.fromEntries(SERIES.map(([name, description]) => [name, series.description(description)])),
  ).required(),
  totals: Joi.object(
    Object.fromEntries(
      SERIES.map(([name, description]) => [name, number().description(`${description}, over the window`)]),
    ),
  ).required(),
  instances_expected: Joi.number()
    .integer()
    .allow(null)
    .required()
    .description("The active revision's min_scale (null: no active revision)"),
  instances: Joi.array()
    .items(
      Joi.object({
        id: uuid().required(),
        index: Joi.number().integer().required().description('The `instance` of its deploy-log lines'),
        revision_id: uuid().required(),
        status: Joi.string().valid('starting', 'running', 'stopping').required(),
        started_at: timestamp().required(),
        restarts: Joi.number().integer().required(),
        memory_bytes: number(),
        cpu_percent: number(),
        healthy: Joi.boolean().allow(null).required().description('The last health probe answered (null: none yet)'),
        last_health_check_at: timestamp().allow(null).required(),
      }).id('InstanceMetrics'),
    )
    .required(),
  traces_by_revision: Joi.array()
    .items(
      Joi.object({
        revision_id: Joi.string()
          .allow(null)
          .required()
          .description(
            "The revision its traces name (their runs' metadata.revision_id, which deployed instances set); null: traces naming none",
          ),
        traces: Joi.number().integer().required(),
        errors: Joi.number().integer().required().description('Traces whose root ended in an error'),
        latency_p50_ms: number().description('Median root latency of the traces that ended, milliseconds'),
        latency_p95_ms: number().description('95th percentile root latency, milliseconds'),
        prompt_tokens: Joi.number().integer().required(),
        completion_tokens: Joi.number().integer().required(),
        total_tokens: Joi.number().integer().required(),
        last_trace_at: timestamp().required().description('When the newest of them started'),
      }).id('RevisionTraceRollup'),
    )
    .required()
    .description(
      "The deployment's traces that started in the window, per revision, newest first (at most 20 revisions): " +
        'compare error rate, latency and tokens across a rollout',
    ),
}).id('DeploymentMetrics');
