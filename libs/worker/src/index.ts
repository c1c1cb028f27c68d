export { healthPortRole, maintenanceRole, outboxRelayRole, webhookDeliveryRole } from './roles.js';
export { WorkerMetrics } from './worker-metrics.js';
export { runWorkerProcess, type Running, type WorkerProcessContext, type WorkerProcessSpec, type WorkerRole, type WorkerRoleContext } from './worker-process.js';
