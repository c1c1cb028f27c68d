import type { Readable } from 'node:stream';
import type { DataSource } from 'typeorm';
import { batchOperations, readJsonBody, readMultipartOperations } from './body.js';
import { TracingIngest } from './ingest.js';
import { BATCH_SIZE_LIMIT, BATCH_SIZE_LIMIT_BYTES, DEFAULT_INGEST_LIMITS, type IngestLimits } from './limits.js';
import { OtlpTraceIngest } from './otlp-ingest.js';
import { validateOperation } from './run-ops.js';

type Headers = Record<string, unknown>;

/** What is logged when recording a trace's deployment activity fails (the runs are written regardless). */
export const TRACE_ACTIVITY_FAILED = 'recording deployment activity from a trace failed';

/** Who writes: a workspace (a workspace key), optionally bound to one of its projects (a deployment's trace front). */
export interface IntakeScope {
  workspaceId: string;
  /** The one project this writer may write (TracingIngest.write's `boundTo`). */
  boundTo?: string | null;
}

/** The LangSmith server version whose ingest and run reads (`/api/v1`, `/api/v2/runs`) this server answers. */
export const LANGSMITH_API_LEVEL = '0.16.0';

/** The ingest endpoints, under `/api/v1`, as the langsmith client and OTLP exporters call them. */
export type IngestEndpoint = 'multipart' | 'batch' | 'create' | 'update' | 'otlp';

const ENDPOINTS: ReadonlyArray<{ method: string; path: RegExp; endpoint: IngestEndpoint }> = [
  { method: 'POST', path: /^\/runs\/multipart$/, endpoint: 'multipart' },
  { method: 'POST', path: /^\/runs\/batch$/, endpoint: 'batch' },
  { method: 'POST', path: /^\/runs$/, endpoint: 'create' },
  { method: 'PATCH', path: /^\/runs\/([^/]+)$/, endpoint: 'update' },
  { method: 'POST', path: /^\/otel\/v1\/traces$/, endpoint: 'otlp' },
];

/** The ingest endpoint a request under `/api/v1` calls (`path` without the prefix or query), or null. */
export function ingestEndpointOf(method: string, path: string): { endpoint: IngestEndpoint; runId?: string } | null {
  for (const e of ENDPOINTS) {
    const match = e.method === method.toUpperCase() ? e.path.exec(path) : null;
    if (match)
      return match[1] === undefined
        ? { endpoint: e.endpoint }
        : { endpoint: e.endpoint, runId: decodeURIComponent(match[1]) };
  }
  return null;
}

/**
 * Reads one ingest request of any kind and writes its runs: the one implementation behind the
 * api's `/api/v1` routes and every deployment's trace front. Every request's runs are validated
 * whole, then written in one transaction (TracingIngest).
 */
export class TraceIntake {
  readonly ingest: TracingIngest;
  private readonly otlpIngest: OtlpTraceIngest;

  /** `onDeploymentsWritten`: see TracingIngest (a trace is activity of its deployment). */
  constructor(
    dataSource: DataSource,
    limits: IngestLimits = DEFAULT_INGEST_LIMITS,
    onDeploymentsWritten?: (deploymentIds: string[]) => Promise<void>,
  ) {
    this.ingest = new TracingIngest(dataSource, limits, undefined, onDeploymentsWritten);
    this.otlpIngest = new OtlpTraceIngest(dataSource, this.ingest);
  }

  /**
   * What the langsmith client reads before it sends (`GET /info`): multipart with gzip, and our
   * batch bounds. `version` is the LangSmith API level whose endpoints this server answers (the
   * client warns before `client.runs` calls to a server below 0.16); Slipway's own is beside it.
   */
  static info(version: string) {
    return {
      version: LANGSMITH_API_LEVEL,
      slipway_version: version,
      license_expiration_time: null,
      batch_ingest_config: {
        use_multipart_endpoint: true,
        size_limit_bytes: BATCH_SIZE_LIMIT_BYTES,
        size_limit: BATCH_SIZE_LIMIT,
        scale_up_qsize_trigger: 1000,
        scale_up_nthreads_limit: 16,
        scale_down_nempty_trigger: 4,
      },
      instance_flags: {
        gzip_body_enabled: true,
        zstd_compression_enabled: false,
        dataset_examples_multipart_enabled: false,
      },
    };
  }

  /** Reads and writes one request to `endpoint` (`runId`: the update's path id). */
  receive(
    endpoint: IngestEndpoint,
    scope: IntakeScope,
    headers: Headers,
    body: Readable,
    runId?: string,
  ): Promise<void> {
    switch (endpoint) {
      case 'multipart':
        return this.multipart(scope, headers, body);
      case 'batch':
        return this.batch(scope, headers, body);
      case 'create':
        return this.create(scope, headers, body);
      case 'update':
        return this.update(scope, runId!, headers, body);
      case 'otlp':
        return this.otlp(scope, headers, body);
    }
  }

  async multipart({ workspaceId, boundTo = null }: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    await this.ingest.write(workspaceId, await readMultipartOperations(body, headers, this.ingest.limits), boundTo);
  }

  async batch({ workspaceId, boundTo = null }: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    await this.ingest.write(
      workspaceId,
      batchOperations(await readJsonBody(body, headers, this.ingest.limits), this.ingest.limits),
      boundTo,
    );
  }

  async create({ workspaceId, boundTo = null }: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    const run = await readJsonBody(body, headers, this.ingest.limits);
    await this.ingest.write(workspaceId, [validateOperation('create', run, 'body')], boundTo);
  }

  async update(
    { workspaceId, boundTo = null }: IntakeScope,
    runId: string,
    headers: Headers,
    body: Readable,
  ): Promise<void> {
    const run = await readJsonBody(body, headers, this.ingest.limits);
    const fields = run && typeof run === 'object' && !Array.isArray(run) ? { ...run, id: runId } : run;
    await this.ingest.write(workspaceId, [validateOperation('update', fields, 'body')], boundTo);
  }

  /** An OTLP/HTTP trace export (JSON or protobuf), into the project its `Langsmith-Project` header names. */
  async otlp({ workspaceId, boundTo = null }: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    const project = typeof headers['langsmith-project'] === 'string' ? headers['langsmith-project'] : null;
    await this.otlpIngest.write(workspaceId, headers, body, project, boundTo);
  }
}
