import { useState } from 'react';
import { formatTime } from '../../phases';
import { ErrorText, short, useApi, useLoad } from '../common';
import type { DeploymentMetrics } from '../metrics/types';
import { errorRate, milliseconds, tokens } from './format';

const WINDOWS = [
  ['1h', 'Last hour'],
  ['6h', 'Last 6 hours'],
  ['24h', 'Last 24 hours'],
] as const;
type TraceWindow = (typeof WINDOWS)[number][0];

/**
 * The deployment's traces per revision over a window (`traces_by_revision` of its metrics):
 * whether a rollout made the agent slower, costlier or more error-prone. The revision serving
 * now is marked.
 */
export function RevisionTraces({
  deploymentId,
  activeRevisionId,
}: {
  deploymentId: string;
  activeRevisionId: string | null;
}) {
  const api = useApi();
  const [range, setRange] = useState<TraceWindow>('1h');
  const metrics = useLoad(
    (signal) => api.get<DeploymentMetrics>(`/v2/deployments/${deploymentId}/metrics`, { window: range }, signal),
    [api, deploymentId, range],
  );
  const rows = metrics.data?.traces_by_revision ?? [];
  return (
    <section aria-labelledby="revision-traces-title" className="metrics">
      <h2 id="revision-traces-title">Revisions compared</h2>
      <fieldset className="window">
        <legend>Window</legend>
        {WINDOWS.map(([w, label]) => (
          <label key={w}>
            <input type="radio" name="traces-window" value={w} checked={range === w} onChange={() => setRange(w)} />{' '}
            {label}
          </label>
        ))}
      </fieldset>
      <ErrorText error={metrics.error} />
      {metrics.data && !rows.length && <p>No traces in this window.</p>}
      {rows.length > 0 && (
        <div className="table-scroll" role="region" aria-label="Traces per revision, scrollable" tabIndex={0}>
          <table className="revision-traces">
            <caption>Traces per revision, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Revision</th>
                <th scope="col">Traces</th>
                <th scope="col">Error rate</th>
                <th scope="col">p50 latency</th>
                <th scope="col">p95 latency</th>
                <th scope="col">Tokens</th>
                <th scope="col">Last trace</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.revision_id ?? 'none'} data-revision-id={r.revision_id ?? ''}>
                  <th scope="row">
                    {r.revision_id ? <code title={r.revision_id}>{short(r.revision_id)}</code> : 'none named'}
                    {r.revision_id && r.revision_id === activeRevisionId && <span className="tag-active"> active</span>}
                  </th>
                  <td data-field="traces">{r.traces}</td>
                  <td data-field="error_rate">{errorRate(r.errors, r.traces)}</td>
                  <td>{milliseconds(r.latency_p50_ms)}</td>
                  <td>{milliseconds(r.latency_p95_ms)}</td>
                  <td>
                    {tokens(r.total_tokens)}{' '}
                    <span className="note">
                      ({tokens(r.prompt_tokens)} prompt, {tokens(r.completion_tokens)} completion)
                    </span>
                  </td>
                  <td>{formatTime(r.last_trace_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
