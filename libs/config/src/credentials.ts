import type { Config } from './index.js';

/** The password of a connection URL, as written (percent-encoded) and decoded; none when it has none. */
export function urlPasswords(url: string): string[] {
  let password: string;
  try {
    password = new URL(url).password;
  } catch {
    return [];
  }
  if (!password) return [];
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // Not valid percent-encoding: only the raw form can appear.
  }
  return [...new Set([password, decoded])];
}

/**
 * Every credential of the platform itself that a process holds: the passwords inside
 * DATABASE_URL and REDIS_URL, the secrets keys (current and previous, as configured: base64)
 * and the bootstrap API key. The logger masks them in every line (createLogger's `secrets`).
 */
export function platformCredentials(
  config: Pick<Config, 'databaseUrl' | 'redisUrl' | 'secretsKey' | 'previousSecretsKeys' | 'bootstrapApiKey'>,
): string[] {
  return [
    ...urlPasswords(config.databaseUrl),
    ...urlPasswords(config.redisUrl),
    config.secretsKey.key.toString('base64'),
    ...config.previousSecretsKeys.map((key) => key.toString('base64')),
    ...(config.bootstrapApiKey ? [config.bootstrapApiKey] : []),
  ];
}
