export { healthPortRole, maintenanceRole, outboxRelayRole, previewFeedbackRole, webhookDeliveryRole } from './roles.js';
export { PreviewFeedback } from './preview-feedback.js';
export { WorkerMetrics } from './worker-metrics.js';
export {
  runWorkerProcess,
  type Running,
  type WorkerProcessContext,
  type WorkerProcessSpec,
  type WorkerRole,
  type WorkerRoleContext,
} from './worker-process.js';
export { integrationProvider, IntegrationUnavailable } from './integration-provider.js';
