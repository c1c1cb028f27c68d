import { useState, type FormEvent } from 'react';
import { apiBase } from '../../api/client';
import type { Deployment } from '../../api/types';
import { formatTime } from '../../phases';
import { ErrorText, short, useApi, useLoad } from '../common';
import { seconds, tokens } from './format';
import { filterExpression, type TraceFilters } from './filters';
import { loadTracePage, type NextPage, type TraceRow } from './load';
import { TraceStatus } from './TraceStatus';

/** What to do when nothing has been traced yet: where runs come from, and how to send some. */
function NoTracesYet({ deployment }: { deployment: Deployment }) {
  const endpoint = `${location.origin}${apiBase()}/api/v1`;
  return (
    <section className="empty-state" aria-labelledby="no-traces-title">
      <h3 id="no-traces-title">No traces yet</h3>
      <p>
        Traces appear here when the deployment’s agent runs: instances the platform runs trace by themselves. A
        LangSmith client anywhere can send runs here too, to this server’s <code>/api/v1</code> with the project set to
        the deployment’s name:
      </p>
      <pre>{`export LANGSMITH_TRACING=true
export LANGSMITH_ENDPOINT=${endpoint}
export LANGSMITH_API_KEY=$SLIPWAY_API_KEY
export LANGSMITH_PROJECT=${deployment.name}`}</pre>
    </section>
  );
}

/** The filter form; applying it puts the filters in the address. */
function FilterForm({ filters, onApply }: { filters: TraceFilters; onApply: (f: TraceFilters) => void }) {
  const [draft, setDraft] = useState(filters);
  const field = (k: keyof TraceFilters) => ({
    value: draft[k],
    onChange: (e: { target: { value: string } }) => setDraft((d) => ({ ...d, [k]: e.target.value })),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(draft);
  };
  return (
    <form className="filters" aria-label="Trace filters" onSubmit={submit}>
      <label>
        Trace status
        <select {...field('status')}>
          <option value="">any</option>
          <option value="success">success</option>
          <option value="error">error</option>
        </select>
      </label>
      <label>
        Revision id
        <input {...field('revision')} spellCheck={false} />
      </label>
      <label>
        Thread id
        <input {...field('thread')} spellCheck={false} />
      </label>
      <label>
        Minimum latency (s)
        <input {...field('minLatency')} type="number" min="0" step="any" inputMode="decimal" />
      </label>
      <label>
        Metadata key
        <input {...field('metaKey')} spellCheck={false} />
      </label>
      <label>
        Metadata value
        <input {...field('metaValue')} spellCheck={false} />
      </label>
      <button type="submit" className="primary">
        Apply filters
      </button>
    </form>
  );
}

function TraceTable({ rows, traceHref }: { rows: TraceRow[]; traceHref: (traceId: string) => string }) {
  return (
    <div className="table-scroll" role="region" aria-label="Traces, scrollable" tabIndex={0}>
      <table className="traces">
        <caption>Traces, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Name</th>
            <th scope="col">Latency</th>
            <th scope="col">Tokens</th>
            <th scope="col">Thread</th>
            <th scope="col">Revision</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.traceId} data-trace-id={t.traceId}>
              <td>
                <TraceStatus status={t.status} />
              </td>
              <td>
                <a href={traceHref(t.traceId)}>{t.name}</a>
              </td>
              <td>{seconds(t.latency)}</td>
              <td>{tokens(t.totalTokens)}</td>
              <td>{t.threadId ? <code title={t.threadId}>{short(t.threadId)}</code> : '—'}</td>
              <td>{t.revisionId ? <code title={t.revisionId}>{short(t.revisionId)}</code> : '—'}</td>
              <td>{formatTime(t.startTime)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The deployment's traces, newest first, a page at a time (Load more appends the next). Keyed by
 * its filters by the tab, so new filters start again from the first page.
 */
export function TraceList({
  deployment,
  filters,
  onFilter,
  traceHref,
  allHref,
}: {
  deployment: Deployment;
  filters: TraceFilters;
  onFilter: (f: TraceFilters) => void;
  traceHref: (traceId: string) => string;
  /** The list without filters. */
  allHref: string;
}) {
  const api = useApi();
  const first = useLoad(
    (signal) => loadTracePage(api, deployment, filters, null, signal),
    [api, deployment.id, deployment.tracer_session_id],
  );
  // The pages after the first; `next` stays undefined until Load more was used once.
  const [more, setMore] = useState<{ rows: TraceRow[]; next?: NextPage; busy: boolean; error: string | null }>({
    rows: [],
    busy: false,
    error: null,
  });
  const filtered = filterExpression(filters) !== null;
  const rows = [...(first.data?.rows ?? []), ...more.rows];
  const next = more.next !== undefined ? more.next : (first.data?.next ?? null);

  const loadMore = async () => {
    setMore((m) => ({ ...m, busy: true, error: null }));
    try {
      const page = await loadTracePage(api, deployment, filters, next);
      setMore((m) => ({ rows: [...m.rows, ...page.rows], next: page.next, busy: false, error: null }));
    } catch (err) {
      setMore((m) => ({ ...m, busy: false, error: (err as Error).message }));
    }
  };

  return (
    <>
      <FilterForm filters={filters} onApply={onFilter} />
      <ErrorText error={first.error ?? more.error} />
      {!first.data ? (
        !first.error && <p role="status">Loading traces…</p>
      ) : !rows.length ? (
        filtered ? (
          <section className="empty-state" aria-labelledby="no-match-title">
            <h3 id="no-match-title">No traces match these filters</h3>
            <p>
              <a href={allHref}>Show every trace</a> of this deployment.
            </p>
          </section>
        ) : (
          <NoTracesYet deployment={deployment} />
        )
      ) : (
        <>
          <TraceTable rows={rows} traceHref={traceHref} />
          {next && (
            <div className="pager">
              <button type="button" className="secondary" onClick={loadMore} disabled={more.busy}>
                {more.busy ? 'Loading…' : 'Load more'}
              </button>
            </div>
          )}
        </>
      )}
    </>
  );
}
