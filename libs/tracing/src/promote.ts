import { ancestorsOf, LARGE_FIELDS, type LargeField, type RunFields } from './run-ops.js';

/** The row of a run: its promoted, filterable columns. */
export interface RunRow {
  workspace_id: string;
  id: string;
  start_time: string;
  project_id: string;
  trace_id: string;
  parent_run_id: string | null;
  dotted_order: string;
  run_type: string;
  name: string;
  status: 'success' | 'error' | 'pending';
  error: string | null;
  end_time: string | null;
  first_token_time: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  model: string | null;
  thread_id: string | null;
  revision_id: string | null;
  run_id: string | null;
  assistant_id: string | null;
  checkpoint_id: string | null;
  reference_example_id: string | null;
  tags: string[];
  metadata: Record<string, unknown> | null;
  truncated_fields: string[];
}

export type RunPayload = Partial<Record<LargeField, unknown>>;

/** Promoted text is short: longer values are cut to this many characters. */
const MAX_PROMOTED_TEXT = 512;
/** Metadata is kept on the row (for filters) when its JSON is at most this long. */
const MAX_ROW_METADATA_BYTES = 16 * 1024;

const obj = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
const text = (v: unknown): string | null =>
  typeof v === 'string'
    ? v.slice(0, MAX_PROMOTED_TEXT)
    : typeof v === 'number' || typeof v === 'boolean'
      ? String(v)
      : null;
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);

/**
 * The `usage_metadata` of an LLM result's first message, as LangChain's tracer sends a chat
 * model's run: `generations[0][0].message`, serialized (`kwargs`) or plain.
 */
function messageUsage(out: Record<string, unknown> | null): Record<string, unknown> | null {
  const generations = out?.generations;
  const first = Array.isArray(generations)
    ? Array.isArray(generations[0])
      ? generations[0][0]
      : generations[0]
    : null;
  const message = obj(obj(first)?.message);
  return obj(obj(message?.kwargs)?.usage_metadata) ?? obj(message?.usage_metadata);
}

/**
 * Token counts the way LangChain and the LangSmith SDK report them: `usage_metadata` (in the
 * outputs, the metadata, or an LLM result's message), or an LLM result's `llm_output.token_usage`.
 */
function tokensOf(outputs: unknown, metadata: Record<string, unknown> | null) {
  const out = obj(outputs);
  const usage = obj(out?.usage_metadata) ?? obj(metadata?.usage_metadata) ?? messageUsage(out);
  if (usage) {
    const prompt = count(usage.input_tokens);
    const completion = count(usage.output_tokens);
    return { prompt, completion, total: count(usage.total_tokens) ?? (prompt ?? 0) + (completion ?? 0) };
  }
  const legacy = obj(obj(out?.llm_output)?.token_usage);
  if (legacy) {
    const prompt = count(legacy.prompt_tokens);
    const completion = count(legacy.completion_tokens);
    return { prompt, completion, total: count(legacy.total_tokens) ?? (prompt ?? 0) + (completion ?? 0) };
  }
  return { prompt: null, completion: null, total: null };
}

function firstTokenTime(events: unknown): string | null {
  if (!Array.isArray(events)) return null;
  for (const e of events) {
    const event = obj(e);
    if (event?.name === 'new_token' && typeof event.time === 'string' && !Number.isNaN(Date.parse(event.time)))
      return new Date(event.time).toISOString();
  }
  return null;
}

/**
 * A field that fits is stored as sent; one larger than `cap` bytes of JSON is replaced by a
 * marker saying so, and its name joins the run's `truncated_fields` (what a reader sees).
 */
export function capPayload(fields: RunFields, cap: number): { payload: RunPayload; truncated: string[] } {
  const payload: RunPayload = {};
  const truncated: string[] = [];
  for (const key of LARGE_FIELDS) {
    const value = fields[key];
    if (value === undefined || value === null) continue;
    const bytes = Buffer.byteLength(JSON.stringify(value));
    if (bytes > cap) {
      payload[key] = { slipway_truncated: true, original_bytes: bytes, limit_bytes: cap };
      truncated.push(key);
    } else payload[key] = value;
  }
  return { payload, truncated };
}

/** The row of a complete run (create merged with its updates). */
export function promote(workspaceId: string, projectId: string, fields: RunFields, truncated: string[]): RunRow {
  const extra = obj(fields.extra);
  const metadata = obj(extra?.metadata);
  const invocation = obj(extra?.invocation_params);
  const tokens = tokensOf(fields.outputs, metadata);
  const metadataJson = metadata ? JSON.stringify(metadata) : null;
  const rowMetadata = metadataJson && Buffer.byteLength(metadataJson) <= MAX_ROW_METADATA_BYTES ? metadata : null;
  const ancestors = ancestorsOf(fields.dotted_order!);
  return {
    workspace_id: workspaceId,
    id: fields.id,
    start_time: fields.start_time!,
    project_id: projectId,
    trace_id: fields.trace_id!,
    parent_run_id: fields.parent_run_id ?? ancestors.at(-1) ?? null,
    dotted_order: fields.dotted_order!,
    run_type: fields.run_type!,
    name: fields.name!,
    status: fields.error ? 'error' : fields.end_time ? 'success' : 'pending',
    error: fields.error || null,
    end_time: fields.end_time ?? null,
    first_token_time: firstTokenTime(fields.events),
    prompt_tokens: tokens.prompt,
    completion_tokens: tokens.completion,
    total_tokens: tokens.total,
    model: text(metadata?.ls_model_name) ?? text(invocation?.model) ?? text(invocation?.model_name),
    thread_id: text(metadata?.thread_id) ?? text(metadata?.session_id) ?? text(metadata?.conversation_id),
    revision_id: text(metadata?.revision_id),
    run_id: text(metadata?.run_id),
    assistant_id: text(metadata?.assistant_id),
    checkpoint_id: text(metadata?.checkpoint_id) ?? text(metadata?.langgraph_checkpoint_id),
    reference_example_id: fields.reference_example_id ?? null,
    tags: fields.tags ?? [],
    metadata: rowMetadata,
    truncated_fields: metadataJson && !rowMetadata ? [...truncated, 'metadata'] : truncated,
  };
}
