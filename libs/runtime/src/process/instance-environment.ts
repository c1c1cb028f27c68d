/**
 * An instance's environment, built from scratch. Precedence, lowest first: NODE_ENV=production,
 * the graph config's env, the revision's secrets, then what the platform manages (`data`:
 * DATABASE_URI, REDIS_URI, REDIS_PREFIX, naming the deployment's own role and Redis user; the
 * runtime adds PORT, PATH and HOME), which nothing overrides.
 */
export function instanceEnvironment(input: {
  /** The graph config's env (lowest precedence). */
  base?: Record<string, string>;
  secrets: ReadonlyArray<{ name: string; value: string }>;
  /** The deployment's store access (never the control plane's credentials). */
  data: Readonly<Record<string, string>>;
}): Record<string, string> {
  const env: Record<string, string> = { NODE_ENV: 'production', ...input.base };
  for (const s of input.secrets) env[s.name] = s.value;
  return { ...env, ...input.data };
}
