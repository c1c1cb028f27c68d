export { deriveKey, SecretBox, keyId } from './secret-box.js';
export { API_KEY_PREFIX, displayPrefix, generateApiKey, hashApiKey, type GeneratedApiKey } from './api-key.js';
export { generateWebhookSecret, signWebhook, WEBHOOK_SECRET_PREFIX } from './webhook-signature.js';
export {
  ingestCredential,
  ingestCredentialDeployment,
  INGEST_CREDENTIAL_PREFIX,
  isIngestCredential,
} from './ingest-credential.js';
export { secretsCodec, SecretsCodec, type NamedSecret, type SecretsKeys } from './secrets-codec.js';
export { secretFingerprint } from './secret-fingerprint.js';
export { edgeToken, isEdgeToken } from './edge-token.js';
