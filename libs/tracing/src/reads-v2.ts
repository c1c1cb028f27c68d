import { isUuid } from '@slipway/domain';
import { UnprocessableError } from './errors.js';
import { ancestorsOf } from './run-ops.js';
import type { RunPosition, StoredRun } from './run-read.repository.js';

/**
 * LangSmith's second read surface (`/api/v2/runs…`), which `langsmith` 0.12's `client.runs.query()`
 * and `client.runs.retrieve()` call: fields are chosen by `selects` (only `id` when none), status and
 * run type are upper case, pages are keyset cursors.
 */

/** Every field `selects` may name (LangSmith's RunSelectField). */
export const RUN_SELECT_FIELDS = [
  'ID',
  'NAME',
  'RUN_TYPE',
  'STATUS',
  'START_TIME',
  'END_TIME',
  'LATENCY_SECONDS',
  'FIRST_TOKEN_TIME',
  'ERROR',
  'ERROR_PREVIEW',
  'EXTRA',
  'METADATA',
  'EVENTS',
  'INPUTS',
  'INPUTS_PREVIEW',
  'OUTPUTS',
  'OUTPUTS_PREVIEW',
  'MANIFEST',
  'PARENT_RUN_IDS',
  'PROJECT_ID',
  'TRACE_ID',
  'THREAD_ID',
  'DOTTED_ORDER',
  'IS_ROOT',
  'REFERENCE_EXAMPLE_ID',
  'REFERENCE_DATASET_ID',
  'TOTAL_TOKENS',
  'PROMPT_TOKENS',
  'COMPLETION_TOKENS',
  'TOTAL_COST',
  'PROMPT_COST',
  'COMPLETION_COST',
  'PROMPT_TOKEN_DETAILS',
  'COMPLETION_TOKEN_DETAILS',
  'PROMPT_COST_DETAILS',
  'COMPLETION_COST_DETAILS',
  'PRICE_MODEL_ID',
  'TAGS',
  'APP_PATH',
  'ATTACHMENTS',
  'THREAD_EVALUATION_TIME',
  'IS_IN_DATASET',
  'LAST_QUEUED_AT',
  'SHARE_URL',
  'FEEDBACK_STATS',
  'LS_USER_ID',
] as const;
export type RunSelectField = (typeof RUN_SELECT_FIELDS)[number];

/** The body of `POST /api/v2/runs/query` (LangSmith's field names). */
export interface RunsQueryV2Input {
  project_ids: string[];
  ids?: string[];
  trace_id?: string;
  is_root?: boolean;
  run_type?: string;
  has_error?: boolean;
  min_start_time?: string;
  max_start_time?: string;
  filter?: string;
  trace_filter?: string;
  tree_filter?: string;
  include_subtree_usage?: boolean;
  selects?: RunSelectField[];
  page_size?: number;
  cursor?: string;
  /** Asked of LangSmith's other backends; this server refuses them by name (UNSUPPORTED_V2). */
  reference_dataset_id?: string;
  reference_examples?: string[];
  ai_search?: string;
  min_feedback_modified_at?: string;
  max_feedback_modified_at?: string;
}

/** Body fields of the v2 query this server does not answer: datasets, feedback and AI search are not kept here. */
export const UNSUPPORTED_V2 = [
  'reference_dataset_id',
  'reference_examples',
  'ai_search',
  'min_feedback_modified_at',
  'max_feedback_modified_at',
] as const;

/** Selected fields that need a run's large fields (its payload row). */
const PAYLOAD_SELECTS = new Set<RunSelectField>([
  'EXTRA',
  'METADATA',
  'EVENTS',
  'INPUTS',
  'INPUTS_PREVIEW',
  'OUTPUTS',
  'OUTPUTS_PREVIEW',
  'MANIFEST',
]);
export const needsPayload = (selects: readonly RunSelectField[]) => selects.some((s) => PAYLOAD_SELECTS.has(s));

const PREVIEW_CHARS = 200;
function preview(v: unknown): string | null {
  if (v == null) return null;
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text;
}

const latencySeconds = (r: StoredRun) =>
  r.end_time ? (Date.parse(r.end_time) - Date.parse(r.start_time)) / 1000 : null;
const metadataOf = (r: StoredRun) =>
  r.metadata ?? (r.payload?.extra as { metadata?: Record<string, unknown> } | null)?.metadata ?? null;

/** What each select reads off a stored run; fields this store does not keep (costs, feedback, datasets) read null. */
const SELECT_VALUE: Record<RunSelectField, (r: StoredRun) => unknown> = {
  ID: (r) => r.id,
  NAME: (r) => r.name,
  RUN_TYPE: (r) => r.run_type.toUpperCase(),
  STATUS: (r) => r.status.toUpperCase(),
  START_TIME: (r) => r.start_time,
  END_TIME: (r) => r.end_time,
  LATENCY_SECONDS: latencySeconds,
  FIRST_TOKEN_TIME: (r) => r.first_token_time,
  ERROR: (r) => r.error,
  ERROR_PREVIEW: (r) => preview(r.error),
  EXTRA: (r) => r.payload?.extra ?? {},
  METADATA: (r) => metadataOf(r) ?? {},
  EVENTS: (r) => r.payload?.events ?? [],
  INPUTS: (r) => r.payload?.inputs ?? {},
  INPUTS_PREVIEW: (r) => preview(r.payload?.inputs),
  OUTPUTS: (r) => r.payload?.outputs ?? null,
  OUTPUTS_PREVIEW: (r) => preview(r.payload?.outputs),
  MANIFEST: (r) => r.payload?.serialized ?? null,
  PARENT_RUN_IDS: (r) => ancestorsOf(r.dotted_order),
  PROJECT_ID: (r) => r.project_id,
  TRACE_ID: (r) => r.trace_id,
  THREAD_ID: (r) => r.thread_id,
  DOTTED_ORDER: (r) => r.dotted_order,
  IS_ROOT: (r) => r.parent_run_id === null,
  REFERENCE_EXAMPLE_ID: (r) => r.reference_example_id,
  REFERENCE_DATASET_ID: () => null,
  TOTAL_TOKENS: (r) => r.total_tokens,
  PROMPT_TOKENS: (r) => r.prompt_tokens,
  COMPLETION_TOKENS: (r) => r.completion_tokens,
  TOTAL_COST: () => null,
  PROMPT_COST: () => null,
  COMPLETION_COST: () => null,
  PROMPT_TOKEN_DETAILS: () => null,
  COMPLETION_TOKEN_DETAILS: () => null,
  PROMPT_COST_DETAILS: () => null,
  COMPLETION_COST_DETAILS: () => null,
  PRICE_MODEL_ID: () => null,
  TAGS: (r) => r.tags,
  APP_PATH: (r) => `/o/${r.workspace_id}/projects/p/${r.project_id}/r/${r.id}?trace_id=${r.trace_id}`,
  ATTACHMENTS: () => ({}),
  THREAD_EVALUATION_TIME: () => null,
  IS_IN_DATASET: () => false,
  LAST_QUEUED_AT: () => null,
  SHARE_URL: () => null,
  FEEDBACK_STATS: () => null,
  LS_USER_ID: () => null,
};

/** A run as `/api/v2` answers it: `id` and the selected fields, under their lower-case names. */
export function runViewV2(r: StoredRun, selects: readonly RunSelectField[]): Record<string, unknown> {
  const view: Record<string, unknown> = { id: r.id };
  for (const s of selects) view[s.toLowerCase()] = SELECT_VALUE[s](r);
  return view;
}

/** The cursor of the page after `last`: its position (times are kept to the millisecond), opaque to the caller. */
export function cursorAfter(last: StoredRun, treeOrder: boolean): string {
  const position: RunPosition = treeOrder
    ? { dottedOrder: last.dotted_order }
    : { startTime: last.start_time, id: last.id };
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The position a cursor of `cursorAfter` names; 422 for anything else, and for a cursor of the other order. */
export function positionOf(cursor: string, treeOrder: boolean): RunPosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  const p = parsed as Record<string, unknown> | null;
  if (
    treeOrder &&
    p &&
    typeof p.dottedOrder === 'string' &&
    p.dottedOrder.length <= 4096 &&
    !p.dottedOrder.includes('\0')
  )
    return { dottedOrder: p.dottedOrder };
  if (
    !treeOrder &&
    p &&
    typeof p.startTime === 'string' &&
    INSTANT.test(p.startTime) &&
    !Number.isNaN(Date.parse(p.startTime)) &&
    typeof p.id === 'string' &&
    isUuid(p.id)
  ) {
    return { startTime: p.startTime, id: p.id };
  }
  throw new UnprocessableError('cursor: not a cursor this server gave for this query.');
}
