import {
  defineRoute,
  ok,
  workspaceOf,
  type HandlerResult,
  type RequestContext,
  type RouteSpec,
} from '../http/route.js';
import {
  ingestAccepted,
  listProjectsQuery,
  otlpExportResponse,
  otlpHeaders,
  projectParams,
  queryRunsBody,
  queryRunsResponse,
  queryRunsV2Body,
  queryRunsV2Response,
  runV2,
  runV2Query,
  type RunV2Query,
  runParams,
  tracingInfoResponse,
  tracingProject,
  tracingProjectList,
  tracingRun,
  type ListProjectsQuery,
} from '../schemas/tracing.schema.js';
import type { TracingService } from '../services/tracing.service.js';
import { otlpEncodingOf, type IntakeScope, type RunsQueryInput, type RunsQueryV2Input } from '@slipway/tracing';

const tag = 'Tracing';
/** Where the langsmith client is pointed (its apiUrl / LANGSMITH_ENDPOINT): LangSmith's self-hosted layout. */
export const TRACING_PREFIX = '/api/v1';
/** The newer reads of the same clients (`client.runs.query()`, `client.runs.retrieve()`), beside it. */
export const TRACING_V2_PREFIX = '/api/v2';

const accepted = (): HandlerResult => ({ status: 202, body: {} });

/**
 * Who writes: the caller's workspace, or, with a deployment's trace-ingest credential (pods a
 * trace front cannot serve), that deployment's project only.
 */
const scopeOf = (ctx: RequestContext<any, any, any>): IntakeScope =>
  ctx.traceWriter
    ? { workspaceId: ctx.traceWriter.workspaceId, boundTo: ctx.traceWriter.projectId }
    : { workspaceId: workspaceOf(ctx) };
const ingestRefusals = {
  401: { description: 'Invalid or missing API key; nothing was written' },
  404: { description: 'A run names a project (`session_id`) that is not in this workspace; nothing was written' },
  413: { description: 'The body, a part or the number of runs is over the ingest limits; nothing was written' },
  415: { description: 'Not the content type or encoding this endpoint reads; nothing was written' },
  422: {
    description: 'Malformed body, a run that is not valid, or text Postgres cannot store (NUL); nothing was written',
  },
};

/** The LangSmith-compatible tracing surface (docs/tracing.md): ingest and the reads the SDK makes. */
export function tracingRoutes(tracing: TracingService, version: string): RouteSpec[] {
  return [
    defineRoute({
      method: 'get',
      path: `${TRACING_PREFIX}/info`,
      operationId: 'tracingInfo',
      summary: 'What the LangSmith client reads before it sends runs: endpoints, batch limits, gzip',
      tag,
      auth: 'none',
      responses: { 200: { description: 'Server info', schema: tracingInfoResponse } },
      handler: () => ok(tracing.info(version)),
    }),
    defineRoute({
      method: 'post',
      path: `${TRACING_PREFIX}/runs/multipart`,
      operationId: 'ingestRunsMultipart',
      summary:
        'Ingest run creates and updates as multipart/form-data (parts post.<id>, patch.<id>, post.<id>.inputs, …), gzip or not',
      tag,
      auth: 'workspace',
      streamBody: true,
      traceIngest: true,
      responses: { 202: { description: 'Every run written', schema: ingestAccepted }, ...ingestRefusals },
      handler: async (ctx) => {
        await tracing.multipart(scopeOf(ctx), ctx.headers, ctx.bodyStream!);
        return accepted();
      },
    }),
    defineRoute({
      method: 'post',
      path: `${TRACING_PREFIX}/runs/batch`,
      operationId: 'ingestRunsBatch',
      summary: 'Ingest run creates and updates as JSON: {"post": [...], "patch": [...]}',
      tag,
      auth: 'workspace',
      streamBody: true,
      traceIngest: true,
      responses: { 202: { description: 'Every run written', schema: ingestAccepted }, ...ingestRefusals },
      handler: async (ctx) => {
        await tracing.batch(scopeOf(ctx), ctx.headers, ctx.bodyStream!);
        return accepted();
      },
    }),
    defineRoute({
      method: 'post',
      path: `${TRACING_PREFIX}/runs`,
      operationId: 'createRun',
      summary: 'Create one run (JSON)',
      tag,
      auth: 'workspace',
      streamBody: true,
      traceIngest: true,
      responses: { 202: { description: 'Written', schema: ingestAccepted }, ...ingestRefusals },
      handler: async (ctx) => {
        await tracing.create(scopeOf(ctx), ctx.headers, ctx.bodyStream!);
        return accepted();
      },
    }),
    defineRoute({
      method: 'post',
      path: `${TRACING_PREFIX}/otel/v1/traces`,
      operationId: 'ingestOtlpTraces',
      summary:
        'OTLP/HTTP trace export (application/x-protobuf or application/json, gzip or not): ' +
        'spans become runs of the project named by Langsmith-Project; answers as OTLP does',
      tag,
      auth: 'workspace',
      streamBody: true,
      traceIngest: true,
      request: { headers: otlpHeaders },
      responses: {
        200: {
          description:
            'Every span written: `{"partialSuccess":{}}`, or an empty ExportTraceServiceResponse to a protobuf request',
          schema: otlpExportResponse,
        },
        ...ingestRefusals,
        404: {
          description:
            'A span names a project (`langsmith.trace.session_id`) that is not in this workspace; nothing was written',
        },
        422: {
          description:
            'Not an ExportTraceServiceRequest, or a span that is not valid (ids, times, parents in a cycle, NUL); nothing was written',
        },
      },
      handler: async (ctx) => {
        await tracing.otlpTraces(scopeOf(ctx), ctx.headers, ctx.bodyStream!);
        // An OTLP client reads the answer in the encoding it sent: an empty protobuf message is zero bytes.
        if (otlpEncodingOf(ctx.headers) === 'protobuf')
          return { status: 200, headers: { 'Content-Type': 'application/x-protobuf' } };
        return ok({ partialSuccess: {} });
      },
    }),
    defineRoute<{ run_id: string }>({
      method: 'patch',
      path: `${TRACING_PREFIX}/runs/:run_id`,
      operationId: 'updateRun',
      summary: 'Update one run (JSON); an update before its create is kept and merged when the create comes',
      tag,
      auth: 'workspace',
      streamBody: true,
      traceIngest: true,
      request: { params: runParams },
      responses: { 202: { description: 'Written', schema: ingestAccepted }, ...ingestRefusals },
      handler: async (ctx) => {
        await tracing.update(scopeOf(ctx), ctx.params.run_id, ctx.headers, ctx.bodyStream!);
        return accepted();
      },
    }),
    defineRoute<{}, ListProjectsQuery>({
      method: 'get',
      path: `${TRACING_PREFIX}/sessions`,
      operationId: 'listTracingProjects',
      summary: "The workspace's tracing projects, newest first (filter by name, name_contains, id)",
      tag,
      auth: 'workspace',
      request: { query: listProjectsQuery },
      responses: { 200: { description: 'A page of projects', schema: tracingProjectList } },
      handler: async (ctx) => {
        const { name, name_contains, id, limit, offset } = ctx.query;
        return ok(
          await tracing.listProjects(workspaceOf(ctx), { name, nameContains: name_contains, ids: id, limit, offset }),
        );
      },
    }),
    defineRoute<{ session_id: string }>({
      method: 'get',
      path: `${TRACING_PREFIX}/sessions/:session_id`,
      operationId: 'getTracingProject',
      summary: 'A tracing project with its stats',
      tag,
      auth: 'workspace',
      request: { params: projectParams },
      responses: {
        200: { description: 'The project', schema: tracingProject },
        404: { description: 'Project not found in this workspace' },
      },
      handler: async (ctx) => ok(await tracing.getProject(workspaceOf(ctx), ctx.params.session_id)),
    }),
    defineRoute<{}, {}, RunsQueryInput>({
      method: 'post',
      path: `${TRACING_PREFIX}/runs/query`,
      operationId: 'queryRuns',
      summary:
        'Query runs: by project (session), trace (in dotted order), parent, root-ness, type, error, start time and a filter expression',
      tag,
      auth: 'workspace',
      request: { body: queryRunsBody },
      responses: {
        200: { description: 'A page of runs and the cursor of the next', schema: queryRunsResponse },
        422: { description: 'A body or filter this server does not answer' },
      },
      handler: async (ctx) => ok(await tracing.queryRuns(workspaceOf(ctx), ctx.body)),
    }),
    defineRoute<{ run_id: string }>({
      method: 'get',
      path: `${TRACING_PREFIX}/runs/:run_id`,
      operationId: 'getRun',
      summary: 'A run with its inputs, outputs and the ids of its children',
      tag,
      auth: 'workspace',
      request: { params: runParams },
      responses: {
        200: { description: 'The run', schema: tracingRun },
        404: { description: 'Run not found in this workspace' },
      },
      handler: async (ctx) => ok(await tracing.getRun(workspaceOf(ctx), ctx.params.run_id)),
    }),
    defineRoute<{}, {}, RunsQueryV2Input>({
      method: 'post',
      path: `${TRACING_V2_PREFIX}/runs/query`,
      operationId: 'queryRunsV2',
      summary:
        'Query runs of projects, newest first in a time window (default the last day), ' +
        'or one trace in tree order; only the selected fields',
      tag,
      auth: 'workspace',
      request: { body: queryRunsV2Body },
      responses: {
        200: {
          description: 'A page of runs (`id` and the selected fields) and the cursor of the next',
          schema: queryRunsV2Response,
        },
        422: {
          description:
            'A filter this server does not answer, a cursor it did not give, or a dataset, feedback or AI-search query (not kept here)',
        },
      },
      handler: async (ctx) => ok(await tracing.queryRunsV2(workspaceOf(ctx), ctx.body)),
    }),
    defineRoute<{ run_id: string }, RunV2Query>({
      method: 'get',
      path: `${TRACING_V2_PREFIX}/runs/:run_id`,
      operationId: 'getRunV2',
      summary: 'One run of a project: `id` and the selected fields (its own tokens)',
      tag,
      auth: 'workspace',
      request: { params: runParams, query: runV2Query },
      responses: {
        200: { description: 'The run', schema: runV2 },
        404: { description: 'No such run in that project of this workspace' },
      },
      handler: async (ctx) =>
        ok(await tracing.getRunV2(workspaceOf(ctx), ctx.params.run_id, ctx.query.project_id, ctx.query.selects ?? [])),
    }),
  ];
}
