export { RegistryClient, RegistryUnavailableError } from './client.js';
export { PLATFORM_ACCOUNT, registryConfiguration, registrySecrets, type RegistrySecrets } from './registry-config.js';
export { prepareRegistry, registryAnswers, startRegistry, type RunningRegistry } from './registry-process.js';
export { deploymentOfRepository, parseImageReference, repositoryPrefix, type ImageReference } from './repositories.js';
export { libtrustKeyId, loadOrCreateSigningKey, selfSignedCertificate } from './signing-key.js';
export {
  parseScopes,
  REGISTRY_ISSUER,
  REGISTRY_SERVICE,
  signRegistryToken,
  type RegistryAccess,
  type RegistryAction,
  type RequestedScope,
  type SignedRegistryToken,
} from './token.js';
