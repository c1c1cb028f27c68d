import type { AgentRun, ThreadState } from '../../api/agent';
import { formatTime } from '../../phases';
import { short } from '../common';
import { ThreadStatus } from './ThreadStatus';

const step = (s: ThreadState) => (typeof s.metadata?.step === 'number' ? s.metadata.step : null);

// Ids are shown whole: checkpoint and run ids made close together share their first characters.

/** The thread's checkpoints, newest first: each one's step, what wrote it and what comes next. */
export function CheckpointHistory({ history }: { history: ThreadState[] }) {
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">Checkpoints</h2>
      <p role="status" className="hint">
        {history.length === 1 ? '1 checkpoint' : `${history.length} checkpoints`}, newest first.
      </p>
      <ol className="checkpoints" aria-label="Checkpoint history">
        {history.map((s, i) => (
          <li key={s.checkpoint?.checkpoint_id ?? i} data-checkpoint-id={s.checkpoint?.checkpoint_id}>
            <code>{s.checkpoint?.checkpoint_id ?? '—'}</code> step {step(s) ?? '—'}
            {typeof s.metadata?.source === 'string' && <> ({s.metadata.source})</>}
            {s.next.length ? <>, next: {s.next.join(', ')}</> : ', done'}
            {s.created_at && <span className="hint"> {formatTime(s.created_at)}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}

/** The thread's runs, newest first. */
export function ThreadRuns({ runs }: { runs: AgentRun[] }) {
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      {!runs.length ? (
        <p>No runs.</p>
      ) : (
        <div className="table-scroll" role="region" aria-label="Runs, scrollable" tabIndex={0}>
          <table className="agent-runs">
            <caption>Runs of this thread, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Assistant</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.run_id} data-run-id={r.run_id}>
                  <td>
                    <code>{r.run_id}</code>
                  </td>
                  <td>
                    <ThreadStatus status={r.status} label="Run status" />
                  </td>
                  <td>
                    <code title={r.assistant_id}>{short(r.assistant_id)}</code>
                  </td>
                  <td>{formatTime(r.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
