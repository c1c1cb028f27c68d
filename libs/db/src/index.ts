export {
  createDatabaseIfMissing,
  createDataSource,
  initializeWhenReachable,
  dropDatabaseIfExists,
  ensureDatabase,
  runMigrations,
  type CreateDataSourceOptions,
} from './data-source.js';
export {
  CATALOG_HARDENING,
  copyDeploymentDatabase,
  DEPLOYMENT_TEMPLATE_DATABASE,
  dropDeploymentDatabase,
  pauseCopiedCrons,
  provisionDeploymentDatabase,
  type DatabaseCopy,
  type DeploymentDatabaseOptions,
  type ProvisionedDatabase,
} from './deployment-database.js';
export * from './entities/index.js';
export { MIGRATIONS } from './migrations/index.js';
export {
  isDataException,
  isDatabaseUnavailable,
  isForeignKeyViolation,
  isRowRefused,
  isUniqueViolation,
  sqlStateOf,
} from './pg-errors.js';
export {
  ApiKeyRepository,
  issueApiKey,
  type ApiKeyFilter,
  type IssueApiKeyInput,
} from './repositories/api-key.repository.js';
export { ping, releaseSessionLock, trySessionLock } from './connection.js';
export {
  DEPLOYMENT_INTEGRATION_FK,
  INTEGRATION_NAME_UNIQUE,
  IntegrationRepository,
  type CloneIntegration,
} from './repositories/integration.repository.js';
export { IdempotencyRepository, type StoredIdempotentResponse } from './repositories/idempotency.repository.js';
export {
  LISTENER_COMPUTE_ID_UNIQUE,
  ListenerRepository,
  type ListenerChanges,
} from './repositories/listener.repository.js';
export {
  OAUTH_PROVIDER_ID_UNIQUE,
  OAuthProviderRepository,
  type OAuthProviderChanges,
} from './repositories/oauth-provider.repository.js';
export type { Page } from './repositories/pagination.js';
export { TenancyRepository, type BootstrapResult } from './repositories/tenancy.repository.js';
export type { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
export { readyBegunListenerDeployments, transitionDeployment } from './repositories/deployment-status.js';
export {
  ACTIVITY_INTERVAL_MS,
  DeploymentActivity,
  DeploymentActivityRepository,
  type ActivityRecord,
} from './repositories/deployment-activity.repository.js';
export { preparedRows, queryRows, runRider, type Rider } from './sql.js';
export { entityRows, type EntityRows } from './entity-rows.js';
export { fillSecretNames } from './repositories/secret-names.js';
export { QuotaRepository, type QuotaOverrides } from './repositories/quota.repository.js';
export { UploadRepository, type UploadRecord, type UploadState } from './repositories/upload.repository.js';
export { ProcessRuntimeRepository, type ServingState } from './repositories/process-runtime.repository.js';
export { EDGE_ROUTES_CHANNEL, EdgeRouteRepository, type EdgeRoute } from './repositories/edge-route.repository.js';
export {
  PreviewRepository,
  type FeedbackDue,
  type FeedbackState,
  type ForgeOpenedCursor,
  type PreviewRequest,
  type PreviewRow,
} from './repositories/deployment-previews.js';
export {
  DeploymentDomainRepository,
  stateOnceVerified,
  type DeploymentDomain,
  type DomainClaim,
  type DomainState,
} from './repositories/deployment-domain.repository.js';
export { TracingProjectRepository } from './repositories/tracing-project.repository.js';
export {
  DeploymentSlotsRepository,
  SLOT_LOW_WATER,
  SLOT_SLICE,
  type SlotClaim,
} from './repositories/deployment-slots.repository.js';
export {
  DEPLOYMENT_LISTENER_FK,
  DEPLOYMENT_NAME_UNIQUE,
  DeploymentRepository,
  type DeploymentFilter,
  type DeploymentPatch,
  type InsertedDeployment,
} from './repositories/deployment.repository.js';
export {
  TAG_KEY_UNIQUE,
  TAG_VALUE_UNIQUE,
  TagRepository,
  type DeploymentTag,
  type TagKeyChanges,
  type WorkspaceTagValue,
} from './repositories/tag.repository.js';
export { PgNotifications, type NotificationsLog } from './notifications.js';
export {
  DeploymentMetricsRepository,
  type MetricsBucket,
  type MetricsStep,
} from './repositories/deployment-metrics.repository.js';
export {
  EVENTS_CHANNEL,
  EventRepository,
  publicEvent,
  type EventFilter,
  type PublicEvent,
  type StoredEvent,
} from './repositories/event.repository.js';
export {
  DeploymentCredentialStore,
  type FrontKind,
  type FrontPorts,
  type SealedCredentials,
  type StoreCredentials,
} from './repositories/deployment-credentials.repository.js';
export {
  OutboundWebhookRepository,
  TEST_EVENT_TYPE,
  type OutboundDeliveryAttempt,
  type OutboundDeliveryStatus,
  type OutboundDeliveryTarget,
  type NewOutboundDelivery,
  type OutboundWebhook,
  type OutboundWebhookChanges,
  type OutboundWebhookFormat,
  type OutboundWebhookInput,
  type OutboundDelivery,
} from './repositories/outbound-webhook.repository.js';
export { RegistryRepository, type PushedBlob, type PushTokenGrant } from './repositories/registry.repository.js';
export {
  EdgeCertificateRepository,
  type AcmeAccount,
  type CertificateRecord,
  type CertificateSummary,
  type DueCertificate,
  type IssuedCertificate,
  type StoredCertificate,
} from './repositories/edge-certificate.repository.js';
