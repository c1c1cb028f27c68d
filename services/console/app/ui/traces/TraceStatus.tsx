import type { TraceSummary } from '../../api/types';

const KIND: Record<TraceSummary['status'], string> = { success: 'ok', error: 'failed', pending: 'progress' };

/** A run's or trace's status as the console's badges show statuses (errors in red). */
export function TraceStatus({ status }: { status: TraceSummary['status'] }) {
  return (
    <span className={`badge badge-${KIND[status] ?? 'none'}`} data-status={status}>
      {status}
    </span>
  );
}
