/**
 * The Traces tab's filters: read from and written to the page's address (so a reload or a shared
 * link keeps them), and turned into the filter language of `POST /api/v1/runs/query`
 * (docs/tracing.md, Filters).
 */

export interface TraceFilters {
  /** '' (any), 'success' or 'error'. */
  status: string;
  revision: string;
  thread: string;
  /** Seconds, as typed; '' for none. */
  minLatency: string;
  metaKey: string;
  metaValue: string;
}

/** Each filter's name in the address. */
const PARAMS: Record<keyof TraceFilters, string> = {
  status: 'status',
  revision: 'revision',
  thread: 'thread',
  minLatency: 'min_latency',
  metaKey: 'meta_key',
  metaValue: 'meta_value',
};

export const NO_FILTERS: TraceFilters = {
  status: '',
  revision: '',
  thread: '',
  minLatency: '',
  metaKey: '',
  metaValue: '',
};

export function filtersFromQuery(query: URLSearchParams): TraceFilters {
  const read = (k: keyof TraceFilters) => query.get(PARAMS[k])?.trim() ?? '';
  return {
    status: read('status'),
    revision: read('revision'),
    thread: read('thread'),
    minLatency: read('minLatency'),
    metaKey: read('metaKey'),
    metaValue: read('metaValue'),
  };
}

export function filtersToQuery(filters: TraceFilters): Record<string, string> {
  return Object.fromEntries(
    (Object.keys(PARAMS) as Array<keyof TraceFilters>).map((k) => [PARAMS[k], filters[k].trim()]),
  );
}

/**
 * A string literal of the filter language: its parser takes a backslash as "the next character
 * as it is", so backslashes and double quotes are the two characters to escape.
 */
export function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * The `filter` expression for these filters, or null when none is set (then the deployment's own
 * trace list serves the page). A metadata value without a key, or a latency that is no number,
 * is left out rather than sent to be refused.
 */
export function filterExpression(filters: TraceFilters): string | null {
  const parts: string[] = [];
  if (filters.status === 'success' || filters.status === 'error') parts.push(`eq(status, ${quoted(filters.status)})`);
  if (filters.revision.trim()) parts.push(`eq(revision_id, ${quoted(filters.revision.trim())})`);
  if (filters.thread.trim()) parts.push(`eq(thread_id, ${quoted(filters.thread.trim())})`);
  const latency = Number(filters.minLatency);
  if (filters.minLatency.trim() && Number.isFinite(latency) && latency > 0) parts.push(`gte(latency, ${latency})`);
  if (filters.metaKey.trim()) {
    const key = `eq(metadata_key, ${quoted(filters.metaKey.trim())})`;
    parts.push(filters.metaValue.trim() ? `and(${key}, eq(metadata_value, ${quoted(filters.metaValue.trim())}))` : key);
  }
  if (!parts.length) return null;
  return parts.length === 1 ? parts[0]! : `and(${parts.join(', ')})`;
}
