import type { Readable } from 'node:stream';
import type { DataSource, DeploymentActivity } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import {
  batchOperations,
  BATCH_SIZE_LIMIT,
  BATCH_SIZE_LIMIT_BYTES,
  OtlpTraceIngest,
  readJsonBody,
  readMultipartOperations,
  TracingIngest,
  TracingReads,
  validateOperation,
  type IngestLimits,
  type ProjectFilter,
  type RunsQueryInput,
} from '@slipway/tracing';

type Headers = Record<string, unknown>;

/**
 * The LangSmith-compatible surface (docs/tracing.md): ingest through @slipway/tracing's
 * TracingIngest (every request's runs validated whole, then written in one transaction) and its
 * reads, always within the caller's workspace.
 */
export class TracingService {
  private readonly ingest: TracingIngest;
  private readonly reads: TracingReads;
  private readonly otlpIngest: OtlpTraceIngest;

  /**
   * `activity`: a trace written to a deployment's project is activity of that deployment (it
   * keeps it from `UNUSED` and brings it back; docs/api.md, Deployment status), recorded once per
   * request per deployment, after the runs committed. Throttled (one statement per deployment
   * a minute per process), so awaiting it costs the answer nothing most of the time.
   */
  constructor(dataSource: DataSource, limits?: IngestLimits, activity?: DeploymentActivity, log?: Logger) {
    const recordActivity = activity
      ? async (deploymentIds: string[]) => {
          // The runs are written: a failed activity write is logged, not the client's failure.
          await Promise.all(
            deploymentIds.map((id) => activity.record(id).catch((err) => log?.warn({ err, deploymentId: id }, 'recording deployment activity from a trace failed'))),
          );
        }
      : undefined;
    this.ingest = new TracingIngest(dataSource, limits, undefined, recordActivity);
    this.reads = new TracingReads(dataSource);
    this.otlpIngest = new OtlpTraceIngest(dataSource, this.ingest);
  }

  /** What the langsmith client reads before it sends: multipart with gzip, and our batch bounds. */
  info(version: string) {
    return {
      version,
      license_expiration_time: null,
      batch_ingest_config: {
        use_multipart_endpoint: true,
        size_limit_bytes: BATCH_SIZE_LIMIT_BYTES,
        size_limit: BATCH_SIZE_LIMIT,
        scale_up_qsize_trigger: 1000,
        scale_up_nthreads_limit: 16,
        scale_down_nempty_trigger: 4,
      },
      instance_flags: { gzip_body_enabled: true, zstd_compression_enabled: false, dataset_examples_multipart_enabled: false },
    };
  }

  async multipart(workspaceId: string, headers: Headers, body: Readable): Promise<void> {
    await this.ingest.write(workspaceId, await readMultipartOperations(body, headers, this.ingest.limits));
  }

  async batch(workspaceId: string, headers: Headers, body: Readable): Promise<void> {
    await this.ingest.write(workspaceId, batchOperations(await readJsonBody(body, headers, this.ingest.limits), this.ingest.limits));
  }

  async create(workspaceId: string, headers: Headers, body: Readable): Promise<void> {
    const run = await readJsonBody(body, headers, this.ingest.limits);
    await this.ingest.write(workspaceId, [validateOperation('create', run, 'body')]);
  }

  async update(workspaceId: string, runId: string, headers: Headers, body: Readable): Promise<void> {
    const run = await readJsonBody(body, headers, this.ingest.limits);
    const fields = run && typeof run === 'object' && !Array.isArray(run) ? { ...run, id: runId } : run;
    await this.ingest.write(workspaceId, [validateOperation('update', fields, 'body')]);
  }

  /** An OTLP/HTTP trace export (JSON or protobuf); `project` is the `Langsmith-Project` header. */
  async otlpTraces(workspaceId: string, headers: Headers, body: Readable, project: string | null): Promise<void> {
    await this.otlpIngest.write(workspaceId, headers, body, project);
  }

  listProjects(workspaceId: string, filter: ProjectFilter) {
    return this.reads.listProjects(workspaceId, filter);
  }

  getProject(workspaceId: string, id: string) {
    return this.reads.getProject(workspaceId, id);
  }

  queryRuns(workspaceId: string, input: RunsQueryInput) {
    return this.reads.queryRuns(workspaceId, input);
  }

  getRun(workspaceId: string, id: string) {
    return this.reads.getRun(workspaceId, id);
  }
}
