import type { Deployment, Revision, RevisionHistory } from '../api/types';
import { FAILED_REVISION_STATUSES, TERMINAL_REVISION_STATUSES } from '../api/types';
import { formatDuration, formatTime, PHASE_LABELS, PHASES, phaseDurations } from '../phases';
import { short, StatusBadge } from './common';
import { RevisionStory } from './RevisionStory';

/**
 * The revisions, newest first: each with why it exists, who made it and the commit it built, the
 * statuses it went through and how long each phase took, its status_message where it failed,
 * and the way back to it (rollback). A DEPLOYED revision that no longer serves says so.
 */
export function Timeline(props: {
  deployment: Deployment;
  revisions: Revision[];
  histories: Map<string, RevisionHistory>;
  onRollback: (r: Revision) => void;
}) {
  const { deployment, revisions, histories } = props;
  if (!revisions.length) return <p>No revisions yet.</p>;
  return (
    <ol className="timeline" aria-label="Revision timeline, newest first">
      {revisions.map((revision) => {
        const history = histories.get(revision.id);
        const durations = history ? phaseDurations(history) : null;
        const isActive = revision.id === deployment.active_revision_id;
        const failed = FAILED_REVISION_STATUSES.includes(revision.status) || revision.status === 'INTERRUPTED';
        const canRollBack = !isActive && revision.status === 'DEPLOYED';
        // Deployed once, replaced since: not what serves now.
        const superseded = canRollBack;
        // Any other ended revision with an artifact can be redeployed too (one never built: 400).
        const canRedeploy =
          !isActive && !canRollBack && TERMINAL_REVISION_STATUSES.includes(revision.status) && !!revision.image_uri;
        return (
          <li key={revision.id} className={`revision${isActive ? ' is-active' : ''}`} data-revision-id={revision.id}>
            <div className="revision-head">
              <StatusBadge status={revision.status} />
              <code title={revision.id}>{short(revision.id)}</code>
              {isActive && <span className="tag-active">active</span>}
              {superseded && <span className="tag-superseded">superseded</span>}
              <time dateTime={revision.created_at}>{formatTime(revision.created_at)}</time>
              {revision.redeployed_from && (
                <span className="note">
                  redeploy of <code>{short(revision.redeployed_from)}</code>
                </span>
              )}
            </div>
            <RevisionStory revision={revision} />
            {history && history.changes.length > 0 && (
              <p className="statuses" aria-label="Statuses in order">
                {history.changes.map((c, i) => (
                  <span key={i} title={formatTime(c.at)}>
                    {i === 0 && c.from ? `${c.from} → ` : ''}
                    {c.to}
                    {i < history.changes.length - 1 ? ' → ' : ''}
                  </span>
                ))}
              </p>
            )}
            {durations ? (
              <dl className="durations">
                {PHASES.map((phase) => (
                  <div key={phase}>
                    <dt>{PHASE_LABELS[phase]}</dt>
                    <dd>{formatDuration(durations[phase])}</dd>
                  </div>
                ))}
              </dl>
            ) : (
              TERMINAL_REVISION_STATUSES.includes(revision.status) && (
                <p className="durations">
                  Took {formatDuration(Date.parse(revision.updated_at) - Date.parse(revision.created_at))} in all.
                </p>
              )
            )}
            {failed && revision.status_message && (
              <p className="failure">
                <strong>Why: </strong>
                {revision.status_message}
              </p>
            )}
            <div className="revision-actions">
              <a
                href={`#/deployments/${deployment.id}/revisions/${revision.id}/logs`}
                aria-label={`Logs of revision ${short(revision.id)}`}
              >
                Logs
              </a>
              {canRollBack && (
                <button
                  type="button"
                  onClick={() => props.onRollback(revision)}
                  aria-label={`Roll back to revision ${short(revision.id)}`}
                >
                  Roll back to this revision
                </button>
              )}
              {canRedeploy && (
                <button
                  type="button"
                  onClick={() => props.onRollback(revision)}
                  aria-label={`Redeploy revision ${short(revision.id)}`}
                >
                  Redeploy this revision
                </button>
              )}
            </div>
          </li>
        );
      })}
    </ol>
  );
}
