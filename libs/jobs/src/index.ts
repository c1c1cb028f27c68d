export * from './catalog.js';
export * from './connections.js';
export { enqueueInOutbox, type OutboxOptions } from './outbox.js';
export { OutboxRelay, type EnqueuedHook, type RelayOptions } from './relay.js';
export { RevisionFlow } from './revision-flow.js';
export { PhaseGuard } from './phase-guard.js';
export { createWorker, type HandlerMap, type JobContext, type JobHandler } from './worker.js';
export { Reconciler, type ReconcileReport } from './reconciler.js';
export { runWorkerProcess, type WorkerProcessContext, type WorkerProcessSpec } from './worker-process.js';
