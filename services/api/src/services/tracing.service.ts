import type { Readable } from 'node:stream';
import type { DataSource, DeploymentActivity } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import {
  IngestSlots,
  TRACE_ACTIVITY_FAILED,
  TraceIntake,
  TracingReads,
  type IngestLimits,
  type IntakeScope,
  type ProjectFilter,
  type RunSelectField,
  type RunsQueryInput,
  type RunsQueryV2Input,
} from '@slipway/tracing';

type Headers = Record<string, unknown>;

/** Whose ingest slots a request takes: its workspace's, or (a trace-ingest credential) its deployment project's. */
const writerOf = (scope: IntakeScope) => scope.boundTo ?? scope.workspaceId;

/** Ingest requests of one writer written at once by one api process; past it, 429 (docs/operations.md, Per-tenant bounds). */
export const INGEST_SLOTS_PER_WORKSPACE = 16;

/**
 * The LangSmith-compatible surface (docs/tracing.md): ingest through @slipway/tracing's
 * TraceIntake (the same reading and writing as every deployment's trace front) and its reads,
 * always within the caller's workspace.
 */
export class TracingService {
  private readonly intake: TraceIntake;
  private readonly reads: TracingReads;
  private readonly slots = new IngestSlots(INGEST_SLOTS_PER_WORKSPACE);

  /**
   * `activity`: a trace written to a deployment's project is activity of that deployment (it
   * keeps it from `UNUSED` and brings it back; docs/api.md, Deployment status), recorded once per
   * request per deployment, after the runs committed. Throttled (one statement per deployment
   * a minute per process), so awaiting it costs the answer nothing most of the time.
   */
  constructor(dataSource: DataSource, limits?: IngestLimits, activity?: DeploymentActivity, log?: Logger) {
    const recordActivity =
      activity &&
      ((ids: string[]) =>
        activity.recordAll(ids, (err, deploymentId) => log?.warn({ err, deploymentId }, TRACE_ACTIVITY_FAILED)));
    this.intake = new TraceIntake(dataSource, limits, recordActivity);
    this.reads = new TracingReads(dataSource);
  }

  /** What the langsmith client reads before it sends: multipart with gzip, and our batch bounds. */
  info(version: string) {
    return TraceIntake.info(version);
  }

  multipart(scope: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    return this.slots.run(writerOf(scope), () => this.intake.multipart(scope, headers, body));
  }

  batch(scope: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    return this.slots.run(writerOf(scope), () => this.intake.batch(scope, headers, body));
  }

  create(scope: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    return this.slots.run(writerOf(scope), () => this.intake.create(scope, headers, body));
  }

  update(scope: IntakeScope, runId: string, headers: Headers, body: Readable): Promise<void> {
    return this.slots.run(writerOf(scope), () => this.intake.update(scope, runId, headers, body));
  }

  /** An OTLP/HTTP trace export (JSON or protobuf), into the project its `Langsmith-Project` header names. */
  otlpTraces(scope: IntakeScope, headers: Headers, body: Readable): Promise<void> {
    return this.slots.run(writerOf(scope), () => this.intake.otlp(scope, headers, body));
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

  queryRunsV2(workspaceId: string, input: RunsQueryV2Input) {
    return this.reads.queryRunsV2(workspaceId, input);
  }

  getRunV2(workspaceId: string, id: string, projectId: string, selects: RunSelectField[]) {
    return this.reads.getRunV2(workspaceId, id, projectId, selects);
  }
}
