import { AppError } from './errors.js';
import type { ResourceSpec } from './resource-spec.js';

/**
 * Per-workspace limits (docs/operations.md, Quotas and retention). The server's defaults come
 * from configuration; an organization admin can override any of them for one workspace.
 */
export interface Quotas {
  /** Deployments a workspace may have (those being deleted included, until they are gone). */
  deployments: number;
  /** Highest `min_scale` (and `queue_min_scale`) a resource_spec may ask for. */
  minScale: number;
  /** Highest `max_scale` (and `queue_max_scale`) a resource_spec may ask for. */
  maxScale: number;
  /** Upload URLs a workspace may request per rolling 24 hours. */
  uploadsPerDay: number;
  /** Bytes of completed uploads a workspace may keep stored. */
  uploadBytes: number;
  /** Log lines kept per revision (build and deploy together); the oldest are trimmed. */
  logLinesPerRevision: number;
  /** Log lines kept across the whole workspace; the oldest are trimmed. */
  logLinesTotal: number;
  /** Built artifacts kept per deployment besides the active revision's; older ones are pruned. */
  artifactsKept: number;
  /** Bytes of images a workspace may keep in the built-in registry; pushes beyond are refused. */
  registryBytes: number;
  /** Days of traces kept (by run start time); retention drops what is older (docs/tracing.md, Retention). */
  traceRetentionDays: number;
}

export type QuotaName = keyof Quotas;

/** The snake_case names used in the API, docs and messages. */
export const QUOTA_FIELDS: Record<QuotaName, string> = {
  deployments: 'deployments',
  minScale: 'min_scale',
  maxScale: 'max_scale',
  uploadsPerDay: 'uploads_per_day',
  uploadBytes: 'upload_bytes',
  logLinesPerRevision: 'log_lines_per_revision',
  logLinesTotal: 'log_lines_total',
  artifactsKept: 'artifacts_kept',
  registryBytes: 'registry_bytes',
  traceRetentionDays: 'trace_retention_days',
};

/** 403: the request would take the workspace past one of its quotas; the message names it and its value. */
export class QuotaExceededError extends AppError {
  readonly status = 403;
  constructor(
    readonly quota: QuotaName,
    readonly limit: number,
    what: string,
  ) {
    super(`Quota exceeded: ${what} (quota ${QUOTA_FIELDS[quota]} = ${limit} for this workspace).`);
  }
}

/** Throws (403) when `spec` asks for more scale than `quotas` allow. */
export function assertScaleWithin({ minScale, maxScale }: Quotas, spec: ResourceSpec): void {
  for (const field of ['min_scale', 'queue_min_scale'] as const) {
    const value = spec[field];
    if (typeof value === 'number' && value > minScale)
      throw new QuotaExceededError('minScale', minScale, `resource_spec.${field} is ${value}`);
  }
  for (const field of ['max_scale', 'queue_max_scale'] as const) {
    const value = spec[field];
    if (typeof value === 'number' && value > maxScale)
      throw new QuotaExceededError('maxScale', maxScale, `resource_spec.${field} is ${value}`);
  }
}
