import type { Deployment, Revision } from '../api/types';
import { inProgress } from '../phases';
import { StatusBadge } from './common';

/**
 * What a deployment's status means to someone looking at it: `READY` only once a revision serves.
 * With nothing active yet it says so, or "Building…" while its latest revision is on its way;
 * the API's own status stays in the title. A deployment being deleted keeps its status.
 */
export function ServingStatus({
  deployment,
  latest,
  label,
}: {
  deployment: Deployment;
  latest: Revision | null;
  label?: string;
}) {
  if (deployment.active_revision_id || deployment.status !== 'READY')
    return <StatusBadge status={deployment.status} label={label} />;
  const building = inProgress(latest?.status);
  const text = building ? 'Building…' : 'No revision serving yet';
  return (
    <span
      className={`badge ${building ? 'badge-progress' : 'badge-none'}`}
      data-status={building ? 'BUILDING' : 'NOT_SERVING'}
      title={`API status: ${deployment.status}; no active revision`}
      aria-label={label ? `${label}: ${text}` : undefined}
    >
      {text}
    </span>
  );
}

/**
 * A message that may run to many lines (a failure with its log tail, a stack trace) inside a
 * table cell or a list: its first line, with the whole text one click away.
 */
export function Clipped({ text, className }: { text: string; className?: string }) {
  const [first, ...rest] = text.trim().split('\n');
  const head = first!.replace(/ Last log lines:$/, '');
  if (!rest.length && head.length <= 160) return <span className={className}>{text}</span>;
  return (
    <details className={`clipped${className ? ` ${className}` : ''}`}>
      <summary title="Show the whole message">{head.length > 160 ? `${head.slice(0, 157)}…` : head}</summary>
      <pre>{text}</pre>
    </details>
  );
}
