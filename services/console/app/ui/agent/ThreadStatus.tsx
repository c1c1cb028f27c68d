import { threadBadgeKind } from './agent';

/** A thread's (or an agent run's) status as a badge, its meaning in words for screen readers. */
export function ThreadStatus({ status, label = 'Status' }: { status: string; label?: string }) {
  return (
    <span className={`badge badge-${threadBadgeKind(status)}`} data-status={status} aria-label={`${label}: ${status}`}>
      {status}
    </span>
  );
}
