import { createHmac } from 'node:crypto';

/** Passwords of a deployment's own Postgres and Redis, which run next to it in the cluster. */
export interface StoreCredentials {
  databasePassword: string;
  redisPassword: string;
}

/**
 * Derives the store passwords from a server-held key and the deployment id. Derived, not
 * random, so rendering stays deterministic (the same revision renders the same manifests on
 * every poll, and server-side apply sees no change) without a stored credential per
 * deployment. Anyone holding the key can recompute them; nobody else can.
 */
export function deriveStoreCredentials(masterKey: Buffer, deploymentId: string): StoreCredentials {
  const derive = (purpose: string) => createHmac('sha256', masterKey).update(`slipway/${purpose}/${deploymentId}`).digest('base64url');
  return { databasePassword: derive('postgres-password'), redisPassword: derive('redis-password') };
}
