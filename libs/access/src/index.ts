export { ApiKeyCache } from './api-key-cache.js';
export { addressKey } from './client-address.js';
export { credentialId, credentialOf, credentialsIn, stripCredential, stripOnly } from './credentials.js';
export { SlipwayCredentials } from './slipway-credentials.js';
export { LOCKOUT_RECHECK_MS, RateLimits, type Budget, type RateLimitsDeps } from './rate-limits.js';
