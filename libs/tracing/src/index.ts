export { PayloadTooLargeError, UnprocessableError, UnsupportedMediaTypeError } from './errors.js';
export { BATCH_SIZE_LIMIT, BATCH_SIZE_LIMIT_BYTES, DEFAULT_INGEST_LIMITS, type IngestLimits } from './limits.js';
export { boundaryOf, MultipartParser, parseMultipart, type MultipartLimits, type MultipartPart } from './multipart.js';
export { batchOperations, readJsonBody, readMultipartOperations } from './body.js';
export { validateOperation, type RunFields, type RunOperation } from './run-ops.js';
export { DEFAULT_PROJECT, TracingIngest } from './ingest.js';
export { TracingReads, type RunsQueryInput } from './reads.js';
export { RUN_SELECT_FIELDS, UNSUPPORTED_V2, type RunSelectField, type RunsQueryV2Input } from './reads-v2.js';
export { OtlpTraceIngest } from './otlp-ingest.js';
export { IngestSlots } from './ingest-slots.js';
export {
  ingestEndpointOf,
  TRACE_ACTIVITY_FAILED,
  TraceIntake,
  type IngestEndpoint,
  type IntakeScope,
} from './intake.js';
export { otlpEncodingOf } from './otlp.js';
export { runIdOfSpan } from './otlp-run.js';
export type { ProjectFilter } from './project.repository.js';
export { TracingRetention, type TracingRetentionOptions, type TracingRetentionReport } from './retention.js';
export { TracingRetentionRepository } from './retention.repository.js';
export { RunReadRepository } from './run-read.repository.js';
export { RunRepository } from './run.repository.js';
export {
  deploymentRollups,
  revisionRollups,
  TraceRepository,
  traceView,
  type TraceRow,
  type TraceView,
} from './trace.repository.js';
