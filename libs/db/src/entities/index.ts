import { ApiKey } from './api-key.entity.js';
import { Listener } from './listener.entity.js';
import { OAuthProvider } from './oauth-provider.entity.js';
import { Organization } from './organization.entity.js';
import { Workspace } from './workspace.entity.js';

export { ApiKey, type ApiKeyRole, type ApiKeyScope } from './api-key.entity.js';
export { Listener, type ComputeConfig } from './listener.entity.js';
export { OAuthProvider } from './oauth-provider.entity.js';
export { Organization } from './organization.entity.js';
export { Workspace } from './workspace.entity.js';

/** Every entity, listed explicitly: globs do not survive bundling or tsx path rewriting. */
export const ENTITIES = [Organization, Workspace, ApiKey, Listener, OAuthProvider];
