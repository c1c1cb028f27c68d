export {
  createDatabaseIfMissing,
  createDataSource,
  dropDatabaseIfExists,
  ensureDatabase,
  runMigrations,
  type CreateDataSourceOptions,
} from './data-source.js';
export {
  CATALOG_HARDENING,
  DEPLOYMENT_TEMPLATE_DATABASE,
  dropDeploymentDatabase,
  provisionDeploymentDatabase,
  type DeploymentDatabaseOptions,
  type ProvisionedDatabase,
} from './deployment-database.js';
export * from './entities/index.js';
export { MIGRATIONS } from './migrations/index.js';
export { isDataException, isDatabaseUnavailable, isForeignKeyViolation, isRowRefused, isUniqueViolation, sqlStateOf } from './pg-errors.js';
export { ApiKeyRepository, issueApiKey, type ApiKeyFilter, type IssueApiKeyInput } from './repositories/api-key.repository.js';
export {
  DEPLOYMENT_INTEGRATION_FK,
  INTEGRATION_NAME_UNIQUE,
  IntegrationRepository,
  type PushTarget,
} from './repositories/integration.repository.js';
export { LISTENER_COMPUTE_ID_UNIQUE, ListenerRepository, type ListenerChanges } from './repositories/listener.repository.js';
export {
  OAUTH_PROVIDER_ID_UNIQUE,
  OAuthProviderRepository,
  type OAuthProviderChanges,
} from './repositories/oauth-provider.repository.js';
export type { Page } from './repositories/pagination.js';
export { TenancyRepository, type BootstrapResult } from './repositories/tenancy.repository.js';
export type { DataSource, EntityManager } from 'typeorm';
export {
  transitionDeployment,
  transitionRevision,
  writeRevision,
  writeRevisions,
  type AppliedTransition,
  type PhaseBudgets,
  type RevisionWrite,
  type RevisionTransitionOptions,
  type RevisionTransitionSet,
} from './repositories/status-transitions.js';
export { queryRows } from './sql.js';
export { QuotaRepository, type QuotaOverrides } from './repositories/quota.repository.js';
export { RetentionRepository, type PrunedArtifact } from './repositories/retention.repository.js';
export { DEPLOYMENT_NAME_UNIQUE, DeploymentRepository, type DeploymentFilter, type PresentableDeployment } from './repositories/deployment.repository.js';
export {
  TAG_KEY_UNIQUE,
  TAG_VALUE_UNIQUE,
  TagRepository,
  type DeploymentTag,
  type TagKeyChanges,
  type WorkspaceTagValue,
} from './repositories/tag.repository.js';
export {
  REVISION_LOGS_CHANNEL,
  RevisionLogRepository,
  type LogFilter,
  type LogLine,
  type LogPage,
  type LogScope,
  type LogType,
  type ScopedLogLine,
} from './repositories/revision-log.repository.js';
export { PgNotifications, type NotificationsLog } from './notifications.js';
export { EVENTS_CHANNEL, EventRepository, publicEvent, type EventFilter, type PublicEvent, type StoredEvent } from './repositories/event.repository.js';
export { RevisionHistoryRepository, type RevisionHistory, type StatusChange } from './repositories/revision-history.repository.js';
export {
  DeploymentCredentialStore,
  type FrontPorts,
  type StoreCredentials,
} from './repositories/deployment-credentials.repository.js';
export {
  OutboundWebhookRepository,
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
export { RevisionRepository, type Heartbeat } from './repositories/revision.repository.js';
export { RegistryRepository, type PushedBlob, type PushTokenGrant } from './repositories/registry.repository.js';
