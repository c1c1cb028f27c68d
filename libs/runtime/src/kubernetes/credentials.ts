/**
 * Passwords of a deployment's own Postgres and Redis, which run next to it in the cluster:
 * generated once at random and kept sealed by the control plane (libs/db
 * DeploymentCredentialStore), so rendering stays deterministic (the same revision renders the
 * same manifests on every poll, and server-side apply sees no change) and rotating the secrets
 * key changes nothing.
 */
export interface StoreCredentials {
  databasePassword: string;
  redisPassword: string;
}
