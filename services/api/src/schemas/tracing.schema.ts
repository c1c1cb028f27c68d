import Joi from 'joi';
import { RUN_SELECT_FIELDS, type RunSelectField } from '@slipway/tracing';
import { uuid } from './common.schema.js';

/** Schemas of the LangSmith-compatible surface under /api/v1 (docs/tracing.md). Field names are LangSmith's. */

export const tracingInfoResponse = Joi.object({
  version: Joi.string()
    .required()
    .description('The LangSmith API level answered here (the langsmith client compares it)'),
  slipway_version: Joi.string().required(),
  license_expiration_time: Joi.any().allow(null),
  batch_ingest_config: Joi.object({
    use_multipart_endpoint: Joi.boolean(),
    size_limit_bytes: Joi.number().integer(),
    size_limit: Joi.number().integer(),
    scale_up_qsize_trigger: Joi.number().integer(),
    scale_up_nthreads_limit: Joi.number().integer(),
    scale_down_nempty_trigger: Joi.number().integer(),
  }).required(),
  instance_flags: Joi.object().pattern(Joi.string(), Joi.any()).required(),
}).id('TracingInfo');

export const ingestAccepted = Joi.object({}).unknown(true).id('TracingIngestAccepted');

/** `Langsmith-Project`: the project an OTLP export's spans go to (LangSmith's exporter sends it). */
export const otlpHeaders = Joi.object({
  'langsmith-project': Joi.string()
    .trim()
    .min(1)
    .max(1024)
    .description(
      "The tracing project of the spans (default: `default`); a span's `langsmith.trace.session_name` attribute wins",
    ),
});

/** OTLP's ExportTraceServiceResponse in the JSON mapping: every span was accepted. */
export const otlpExportResponse = Joi.object({
  partialSuccess: Joi.object({}).unknown(true).required(),
}).id('OtlpExportTraceResponse');

export const runParams = Joi.object({ run_id: uuid().required() });
export const projectParams = Joi.object({ session_id: uuid().required() });

export const listProjectsQuery = Joi.object({
  name: Joi.string().max(1024),
  name_contains: Joi.string().max(1024),
  id: Joi.array().items(uuid()).single().max(100),
  limit: Joi.number().integer().min(1).max(100).default(100),
  offset: Joi.number().integer().min(0).max(1_000_000).default(0),
});

export interface ListProjectsQuery {
  name?: string;
  name_contains?: string;
  id?: string[];
  limit: number;
  offset: number;
}

export const tracingProject = Joi.object({
  id: uuid().required(),
  name: Joi.string().required(),
  tenant_id: uuid().required().description('The workspace'),
  description: Joi.any().allow(null),
  start_time: Joi.string().isoDate().required(),
  end_time: Joi.any().allow(null),
  extra: Joi.any().allow(null),
  reference_dataset_id: Joi.any().allow(null),
  deployment_id: uuid().allow(null).required(),
  trace_count: Joi.number().integer().required(),
  run_count: Joi.number().integer().required(),
  error_rate: Joi.number().allow(null).required(),
  total_tokens: Joi.number().integer().required(),
  prompt_tokens: Joi.number().integer().required(),
  completion_tokens: Joi.number().integer().required(),
  last_run_start_time: Joi.string().isoDate().allow(null).required(),
}).id('TracingProject');

export const tracingProjectList = Joi.array().items(tracingProject).id('TracingProjectList');

const time = () =>
  Joi.alternatives(Joi.string().isoDate(), Joi.number().min(0).max(8.64e15)).custom((v) => new Date(v).toISOString());

export const queryRunsBody = Joi.object({
  session: Joi.array().items(uuid()).max(100).allow(null),
  id: Joi.array().items(uuid()).max(1000).allow(null),
  trace: uuid().allow(null),
  parent_run: uuid().allow(null),
  is_root: Joi.boolean().allow(null),
  run_type: Joi.string().max(64).allow(null),
  error: Joi.boolean().allow(null),
  start_time: time().allow(null),
  end_time: time().allow(null),
  filter: Joi.string().max(4096).allow(null, ''),
  select: Joi.array().items(Joi.string().max(64)).max(100).allow(null),
  order: Joi.string().valid('asc', 'desc').allow(null),
  limit: Joi.number().integer().min(1).max(100).allow(null),
  cursor: Joi.string().max(64).allow(null),
})
  .required()
  .id('QueryRuns');

export const tracingRun = Joi.object({
  id: uuid().required(),
  name: Joi.string().required(),
  run_type: Joi.string().required(),
  start_time: Joi.string().isoDate().required(),
  end_time: Joi.string().isoDate().allow(null).required(),
  status: Joi.string().valid('success', 'error', 'pending').required(),
  error: Joi.string().allow(null, '').required(),
  inputs: Joi.any(),
  outputs: Joi.any(),
  events: Joi.any(),
  extra: Joi.any(),
  serialized: Joi.any(),
  tags: Joi.array().items(Joi.string()).required(),
  session_id: uuid().required().description('The project'),
  trace_id: uuid().required(),
  parent_run_id: uuid().allow(null).required(),
  parent_run_ids: Joi.array().items(uuid()).required(),
  dotted_order: Joi.string().required(),
  reference_example_id: uuid().allow(null),
  prompt_tokens: Joi.number().integer().allow(null).required(),
  completion_tokens: Joi.number().integer().allow(null).required(),
  total_tokens: Joi.number().integer().allow(null).required(),
  prompt_cost: Joi.any().allow(null),
  completion_cost: Joi.any().allow(null),
  total_cost: Joi.any().allow(null),
  first_token_time: Joi.string().isoDate().allow(null).required(),
  feedback_stats: Joi.any().allow(null),
  thread_id: Joi.string().allow(null),
  truncated_fields: Joi.array()
    .items(Joi.string())
    .required()
    .description('Large fields stored cut (over the per-field cap)'),
  app_path: Joi.string(),
  child_run_ids: Joi.array().items(uuid()),
}).id('TracingRun');

export const queryRunsResponse = Joi.object({
  runs: Joi.array().items(tracingRun).required(),
  cursors: Joi.object({ next: Joi.string().allow(null).required() }).required(),
}).id('QueryRunsResponse');

/** `/api/v2` (langsmith 0.12's `client.runs`): fields chosen by `selects`, upper-case names. */
const selectField = () => Joi.string().valid(...RUN_SELECT_FIELDS);
const instant = () => Joi.string().isoDate().max(64);

export const queryRunsV2Body = Joi.object({
  project_ids: Joi.array()
    .items(uuid())
    .min(1)
    .max(100)
    .required()
    .description('The tracing projects to read (this server keeps no datasets)'),
  ids: Joi.array().items(uuid()).max(1000),
  trace_id: uuid().description("Only this trace's runs, in tree order (dotted order)"),
  is_root: Joi.boolean(),
  run_type: Joi.string().max(64),
  has_error: Joi.boolean(),
  min_start_time: instant().description('Default: a day ago'),
  max_start_time: instant().description('Default: now'),
  filter: Joi.string().max(4096).allow(''),
  trace_filter: Joi.string().max(4096).allow('').description('Runs of traces whose root matches'),
  tree_filter: Joi.string().max(4096).allow('').description('Runs of traces with any run that matches'),
  include_subtree_usage: Joi.boolean().description("Tokens with the run's descendants' (default false: its own)"),
  selects: Joi.array()
    .items(selectField())
    .max(RUN_SELECT_FIELDS.length)
    .unique()
    .description('The fields of each run (only `id` when none)'),
  page_size: Joi.number().integer().min(1).max(100),
  cursor: Joi.string().max(8192),
  reference_dataset_id: uuid().description('Not supported here: 422'),
  reference_examples: Joi.array().items(uuid()).max(1000).description('Not supported here: 422'),
  ai_search: Joi.string().max(8192).description('Not supported here: 422'),
  min_feedback_modified_at: instant().description('Not supported here: 422'),
  max_feedback_modified_at: instant().description('Not supported here: 422'),
})
  .required()
  .id('QueryRunsV2');

export const runV2Query = Joi.object({
  project_id: uuid().required().description('The project that holds the run'),
  selects: Joi.array().items(selectField()).single().max(RUN_SELECT_FIELDS.length).unique(),
  start_time: instant().description('Accepted and not needed'),
});

export interface RunV2Query {
  project_id: string;
  selects?: RunSelectField[];
}

export const runV2 = Joi.object({ id: uuid().required() })
  .unknown(true)
  .description('`id` and the selected fields, lower-case')
  .id('TracingRunV2');

export const queryRunsV2Response = Joi.object({
  items: Joi.array().items(runV2).required(),
  next_cursor: Joi.string().allow(null).required().description('The `cursor` of the next page; null on the last'),
}).id('QueryRunsV2Response');
