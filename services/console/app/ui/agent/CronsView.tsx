import { useState } from 'react';
import type { AgentApi, Cron } from '../../api/agent';
import { formatTime } from '../../phases';
import { useAction } from '../ApiCall';
import { Dialog, ErrorText, useLoad } from '../common';

/** A cron's row: its schedule, what it runs, when next, and pause/resume and delete. */
function CronRow({
  cron,
  onPause,
  onDelete,
  busy,
}: {
  cron: Cron;
  onPause: () => void;
  onDelete: () => void;
  busy: boolean;
}) {
  const enabled = cron.enabled !== false;
  return (
    <tr data-cron-id={cron.cron_id}>
      <td>
        <code>{cron.schedule}</code>
        {cron.timezone ? ` (${cron.timezone})` : ''}
      </td>
      <td>
        <code>{cron.assistant_id}</code>
      </td>
      <td>{cron.thread_id ? <code>{cron.thread_id}</code> : 'a new thread each run'}</td>
      <td>{enabled ? (cron.next_run_date ? formatTime(cron.next_run_date) : '—') : 'paused'}</td>
      <td className="row-actions">
        <button
          type="button"
          className="secondary"
          disabled={busy}
          onClick={onPause}
          aria-label={`${enabled ? 'Pause' : 'Resume'} cron ${cron.cron_id}`}
        >
          {enabled ? 'Pause' : 'Resume'}
        </button>
        <button
          type="button"
          className="danger"
          disabled={busy}
          onClick={onDelete}
          aria-label={`Delete cron ${cron.cron_id}`}
        >
          Delete
        </button>
      </td>
    </tr>
  );
}

/** The agent's scheduled runs (docs/console.md, Agent): listed soonest first, paused or resumed, deleted after a confirmation. */
export function CronsView({ agent }: { agent: AgentApi }) {
  const crons = useLoad((signal) => agent.searchCrons(100, signal), [agent]);
  const action = useAction();
  const busy = action.busy;
  const [deleting, setDeleting] = useState<Cron | null>(null);
  const act = (work: () => Promise<unknown>) =>
    action.perform(async () => {
      await work();
      crons.reload();
    });
  return (
    <section aria-labelledby="crons-title">
      <h2 id="crons-title">Crons</h2>
      <ErrorText error={crons.error ?? action.error} />
      {!crons.data ? (
        !crons.error && <p role="status">Loading crons…</p>
      ) : !crons.data.length ? (
        <p className="empty-state">No crons.</p>
      ) : (
        <div className="table-scroll" role="region" aria-label="Crons, scrollable" tabIndex={0}>
          <table className="crons">
            <caption>Scheduled runs, soonest first</caption>
            <thead>
              <tr>
                <th scope="col">Schedule</th>
                <th scope="col">Assistant</th>
                <th scope="col">Thread</th>
                <th scope="col">Next run</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {crons.data.map((c) => (
                <CronRow
                  key={c.cron_id}
                  cron={c}
                  busy={busy}
                  onPause={() => act(() => agent.setCronEnabled(c.cron_id, c.enabled === false))}
                  onDelete={() => setDeleting(c)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Dialog title="Delete this cron?" open={!!deleting} onClose={() => setDeleting(null)}>
        <p>
          The cron <code>{deleting?.cron_id}</code> (<code>{deleting?.schedule}</code>) stops for good; runs it already
          made stay.
        </p>
        <div className="dialog-buttons">
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => act(() => agent.deleteCron(deleting!.cron_id)).then(() => setDeleting(null))}
          >
            Delete the cron
          </button>
          <button type="button" className="secondary" onClick={() => setDeleting(null)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </section>
  );
}
