export { ArtifactRetention, type PrunedArtifact } from './artifact-retention.js';
export { RevisionLogWriter } from './log-writer.js';
export { PhaseGuard } from './phase-guard.js';
export { Reconciler, type ReconcileReport } from './reconciler.js';
export { Retention, type RetentionReport } from './retention.js';
export { RevisionFlow, type PhaseStep } from './revision-flow.js';
export { beginDeploymentDelete, type PreviewEndReason } from './deployment-deletion.js';
export { RevisionRepository, type Heartbeat, type NewRevision } from './revision.repository.js';
export {
  RevisionReads,
  type BuildRow,
  type InstancesRow,
  type ListenerOwnerRow,
  type OpenRevision,
  type RolloutRow,
  type ServingRow,
} from './revision-reads.js';
export {
  deadlineFailure,
  nextJob,
  PHASES,
  phaseNamed,
  phaseOf,
  phaseOfJob,
  WORKED_PHASES,
  type Phase,
  type PhaseBudgets,
  type PhaseName,
} from './phases.js';
export type { AppliedTransition, RevisionTransitionOptions, RevisionTransitionSet } from './status-transitions.js';
export { RetentionRepository } from './retention.repository.js';
export { RevisionEventReads, type RevisionEventRow } from './revision-event-reads.js';
export { RevisionHistoryRepository, type RevisionHistory, type StatusChange } from './revision-history.repository.js';
export {
  REVISION_LOGS_CHANNEL,
  RevisionLogRepository,
  type LogFilter,
  type LogLine,
  type LogPage,
  type LogScope,
  type LogType,
  type ScopedLogLine,
} from './revision-log.repository.js';
/** For the bench's fixtures only. */
export { RevisionFixtures } from './fixtures.js';
