export * from './catalog.js';
export * from './connections.js';
export { enqueueInOutbox, type OutboxOptions } from './outbox.js';
export { OutboxRelay, type EnqueuedHook, type RelayOptions } from './relay.js';
export { RevisionFlow } from './revision-flow.js';
