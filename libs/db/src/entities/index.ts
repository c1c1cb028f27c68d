import { ApiKey } from './api-key.entity.js';
import { Deployment } from './deployment.entity.js';
import { Integration, WebhookDelivery } from './integration.entity.js';
import { Listener } from './listener.entity.js';
import { OAuthProvider } from './oauth-provider.entity.js';
import { Organization } from './organization.entity.js';
import { Revision } from './revision.entity.js';
import { TagKey, TagValue } from './tag.entity.js';
import { TracingProject } from './tracing-project.entity.js';
import { Workspace } from './workspace.entity.js';

export { ApiKey, type ApiKeyRole, type ApiKeyScope } from './api-key.entity.js';
export { Deployment, type PreviewRecord, type PreviewSettings, type StoredSourceConfig } from './deployment.entity.js';
export {
  Integration,
  WebhookDelivery,
  type IntegrationConfig,
  type IntegrationProvider,
} from './integration.entity.js';
export { Listener, type ComputeConfig } from './listener.entity.js';
export { OAuthProvider } from './oauth-provider.entity.js';
export { Organization } from './organization.entity.js';
export { Revision, type BuildConfig, type StoredRevisionConfig } from './revision.entity.js';
export { TagKey, TagValue } from './tag.entity.js';
export { TracingProject } from './tracing-project.entity.js';
export { Workspace } from './workspace.entity.js';

/** Every entity, listed explicitly: globs do not survive bundling or tsx path rewriting. */
export const ENTITIES = [
  Organization,
  Workspace,
  ApiKey,
  Listener,
  OAuthProvider,
  TracingProject,
  Deployment,
  Revision,
  TagKey,
  TagValue,
  Integration,
  WebhookDelivery,
];
