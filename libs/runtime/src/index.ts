export { deriveStoreCredentials, type StoreCredentials } from './kubernetes/credentials.js';
export { isDns1035Label, K8S_NAME_MAX, k8sName, STATEFULSET_NAME_MAX } from './kubernetes/k8s-name.js';
export { cpuQuantity, memoryQuantity, storageQuantity } from './kubernetes/quantities.js';
export {
  DEFAULT_STORE_IMAGES,
  objectNames,
  renderManifests,
  SERVER_PORT,
  withoutSecretData,
  type ObjectNames,
  type RenderedObject,
  type RenderInput,
  type StoreImages,
} from './kubernetes/render.js';
export { ArtifactError, parseEnvFile, readArtifact, type Artifact } from './process/artifact.js';
export { probeHealth, waitHealthy, type HealthOutcome } from './process/health.js';
export { groupMembers, isProcessAlive, stopProcessGroup } from './process/os-process.js';
export { isPortFree, pickFreePort } from './process/ports.js';
export {
  instanceEnvironment,
  lastLines,
  PortsExhaustedError,
  ProcessRuntime,
  type LaunchedInstance,
  type LaunchSpec,
  type ProcessRuntimeOptions,
} from './process/process-runtime.js';
export { ProcessStore, type InstanceRecord, type InstanceStatus, type Queryable } from './process/process-store.js';
export { ServingProxy, type ProxyTarget, type ServingProxyOptions } from './process/serving-proxy.js';
