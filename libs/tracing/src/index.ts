export { PayloadTooLargeError, UnprocessableError, UnsupportedMediaTypeError } from './errors.js';
export { BATCH_SIZE_LIMIT, BATCH_SIZE_LIMIT_BYTES, DEFAULT_INGEST_LIMITS, type IngestLimits } from './limits.js';
export { boundaryOf, MultipartParser, parseMultipart, type MultipartLimits, type MultipartPart } from './multipart.js';
export { batchOperations, readJsonBody, readMultipartOperations } from './body.js';
export { validateOperation, type RunFields, type RunOperation } from './run-ops.js';
export { DEFAULT_PROJECT, TracingIngest } from './ingest.js';
export { TracingReads, type RunsQueryInput } from './reads.js';
export type { ProjectFilter } from './project.repository.js';
