export { deriveKey, SecretBox, keyId } from './secret-box.js';
export { API_KEY_PREFIX, displayPrefix, generateApiKey, hashApiKey, type GeneratedApiKey } from './api-key.js';
