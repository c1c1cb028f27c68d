/**
 * What the Traces tab reads: a page of traces (the deployment's own trace list, or root runs of
 * its project through `POST /api/v1/runs/query` when filters are set), and one trace's runs.
 */
import type { Api } from '../../api/client';
import type { Envelope, RunsPage, TracedRun, TraceSummary } from '../../api/types';
import { filterExpression, type TraceFilters } from './filters';

export const PAGE_SIZE = 20;
/** The runs query answers at most 100 runs a page; a trace is read in at most this many pages. */
const TRACE_PAGES = 5;

/** One line of the list, whichever of the two sources it came from. */
export interface TraceRow {
  traceId: string;
  name: string;
  status: TraceSummary['status'];
  startTime: string;
  /** Seconds; null while pending. */
  latency: number | null;
  totalTokens: number;
  threadId: string | null;
  revisionId: string | null;
}

/** Where the next page starts: an offset of the trace list, or a cursor of the runs query. */
export type NextPage = { offset: number } | { cursor: string } | null;

export interface TracePage {
  rows: TraceRow[];
  next: NextPage;
}

/** A run's metadata value as text (LangGraph stamps thread and revision ids there). */
export function metadataText(run: TracedRun, key: string): string | null {
  const value = run.extra?.metadata?.[key];
  return typeof value === 'string' && value ? value : null;
}

/** Seconds from start to end, or null while the run has not ended. */
export function runSeconds(run: Pick<TracedRun, 'start_time' | 'end_time'>): number | null {
  return run.end_time ? (Date.parse(run.end_time) - Date.parse(run.start_time)) / 1_000 : null;
}

const fromSummary = (t: TraceSummary): TraceRow => ({
  traceId: t.trace_id,
  name: t.name ?? '(root not received yet)',
  status: t.status,
  startTime: t.start_time,
  latency: t.latency,
  totalTokens: t.total_tokens,
  threadId: t.thread_id,
  revisionId: t.revision_id,
});

/** A root run stands for its trace: its tokens include its descendants'. */
const fromRoot = (run: TracedRun): TraceRow => ({
  traceId: run.trace_id,
  name: run.name,
  status: run.status,
  startTime: run.start_time,
  latency: runSeconds(run),
  totalTokens: run.total_tokens ?? 0,
  threadId: run.thread_id ?? metadataText(run, 'thread_id'),
  revisionId: metadataText(run, 'revision_id'),
});

/**
 * A page of the deployment's traces, newest first. Without filters the deployment's trace list
 * answers (its summaries know each trace's whole run count and thread); with filters, the root
 * runs of its project that match them.
 */
export async function loadTracePage(
  api: Api,
  deployment: { id: string; tracer_session_id?: string | null },
  filters: TraceFilters,
  from: NextPage,
  signal?: AbortSignal,
): Promise<TracePage> {
  const filter = filterExpression(filters);
  if (!filter) {
    const offset = from && 'offset' in from ? from.offset : 0;
    const page = await api.get<Envelope<TraceSummary>>(
      `/v2/deployments/${deployment.id}/traces`,
      { limit: PAGE_SIZE, offset },
      signal,
    );
    // The envelope says where a next page would start, not whether there is one: a full page may have more.
    return {
      rows: page.resources.map(fromSummary),
      next: page.resources.length === PAGE_SIZE ? { offset: page.offset } : null,
    };
  }
  if (!deployment.tracer_session_id) return { rows: [], next: null };
  const cursor = from && 'cursor' in from ? from.cursor : null;
  const page = await api.request<RunsPage>('POST', '/api/v1/runs/query', {
    body: {
      session: [deployment.tracer_session_id],
      is_root: true,
      limit: PAGE_SIZE,
      filter,
      ...(cursor ? { cursor } : {}),
    },
    signal,
  });
  return { rows: page.runs.map(fromRoot), next: page.cursors.next ? { cursor: page.cursors.next } : null };
}

/** A trace's runs in tree order (dotted order); `complete` is false when it had more than were read. */
export async function loadTraceRuns(
  api: Api,
  traceId: string,
  signal: AbortSignal,
): Promise<{ runs: TracedRun[]; complete: boolean }> {
  const runs: TracedRun[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < TRACE_PAGES; i++) {
    const page: RunsPage = await api.request<RunsPage>('POST', '/api/v1/runs/query', {
      body: { trace: traceId, limit: 100, ...(cursor ? { cursor } : {}) },
      signal,
    });
    runs.push(...page.runs);
    cursor = page.cursors.next;
    if (!cursor) return { runs, complete: true };
  }
  return { runs, complete: false };
}
