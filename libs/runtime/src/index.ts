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
