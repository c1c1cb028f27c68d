export * from './catalog.js';
export * from './connections.js';
export {
  enqueueAllInOutbox,
  enqueueInOutbox,
  OUTBOX_CHANNEL,
  outboxInsert,
  outboxJob,
  type OutboxJob,
  type OutboxOptions,
} from './outbox.js';
export { OutboxRelay, type HandOffHook, type RelayOptions } from './relay.js';
export { createJobConsumer, type HandlerMap, type JobContext, type JobHandler } from './job-consumer.js';
