export { RegistryClient, RegistryUnavailableError } from './client.js';
export {
  backendSocket,
  PLATFORM_ACCOUNT,
  registryConfiguration,
  registrySecrets,
  type RegistrySecrets,
} from './registry-config.js';
export {
  prepareRegistry,
  registryAnswers,
  startGuardOnly,
  startRegistry,
  type RegistryProcessConfig,
  type RunningRegistry,
} from './registry-process.js';
export {
  backendOf,
  PushLedger,
  startPushGuard,
  uploadRequest,
  type PushGuard,
  type RegistryRoom,
  type RoomSource,
} from './push-guard.js';
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
export { manifestBlobs, storedBlobs, storedManifests, type StoredManifest } from './storage.js';
export { sweepRegistry, type SweepOutcome } from './sweep.js';
export { announceSupervisor, recordSweep, requestSweep, type SweepResult } from './sweep-request.js';
