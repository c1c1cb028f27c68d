/**
 * The three phases a revision spends its time in, from its recorded status changes: waiting
 * (created, queued behind another revision, waiting for a builder), building, and deploying
 * (waiting for a deployer, rolling out until healthy).
 */
import type { RevisionHistory, RevisionStatus } from './api/types';
import { TERMINAL_REVISION_STATUSES } from './api/types';

export const PHASES = ['queued', 'building', 'deploying'] as const;
export type Phase = (typeof PHASES)[number];

export const PHASE_LABELS: Record<Phase, string> = { queued: 'Queued', building: 'Building', deploying: 'Deploying' };

const PHASE_OF: Partial<Record<RevisionStatus, Phase>> = {
  CREATING: 'queued',
  QUEUED: 'queued',
  AWAITING_BUILD: 'queued',
  BUILDING: 'building',
  AWAITING_DEPLOY: 'deploying',
  DEPLOYING: 'deploying',
};

/** Whether a revision in `status` is still on its way (queued, building or rolling out). */
export const inProgress = (status: RevisionStatus | null | undefined): boolean =>
  !!status && PHASE_OF[status] !== undefined;

export type PhaseDurations = Record<Phase, number | null>;

/**
 * Milliseconds spent in each phase; null for a phase the revision never entered. The status it
 * is in now counts up to `now` while it is not over.
 */
export function phaseDurations(history: RevisionHistory, now = Date.now()): PhaseDurations {
  const durations: PhaseDurations = { queued: null, building: null, deploying: null };
  const add = (status: RevisionStatus | null, ms: number) => {
    const phase = status ? PHASE_OF[status] : undefined;
    if (phase) durations[phase] = (durations[phase] ?? 0) + Math.max(0, ms);
  };
  let since = Date.parse(history.created_at);
  let current: RevisionStatus = 'CREATING';
  for (const change of history.changes) {
    const at = Date.parse(change.at);
    add(change.from ?? current, change.time_in_status_ms ?? at - since);
    since = at;
    current = change.to;
  }
  if (!TERMINAL_REVISION_STATUSES.includes(current)) add(current, now - since);
  return durations;
}

/** "850 ms", "12.4 s", "3 min 05 s", "1 h 02 min". */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const s = ms / 1_000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

export function formatTime(iso: string | null): string {
  if (!iso) return 'never';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** "5 s ago", "3 min ago", for activity columns (the exact time is in the title). */
export function ago(iso: string | null, now = Date.now()): string {
  if (!iso) return 'never';
  const ms = now - Date.parse(iso);
  if (ms < 60_000) return `${Math.max(0, Math.round(ms / 1_000))} s ago`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min ago`;
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h ago`;
  return `${Math.round(ms / 86_400_000)} d ago`;
}
