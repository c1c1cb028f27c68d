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

/** Where the langsmith client sends when LANGSMITH_ENDPOINT is not set. */
const LANGSMITH_DEFAULT_ENDPOINT = 'https://api.smith.langchain.com';

/** A write target of the langsmith client's LANGSMITH_RUNS_ENDPOINTS (array form). */
interface RunsEndpoint {
  api_url: string;
  api_key: string;
  project_name?: string;
}

/**
 * The tracing variables an instance gets (docs/tracing.md, Tracing a deployment), platform-managed
 * like `data`: LANGSMITH_TRACING, the deployment's trace front as LANGSMITH_ENDPOINT with its
 * trace-ingest credential as LANGSMITH_API_KEY, LANGSMITH_PROJECT (the deployment's name) and
 * LANGCHAIN_REVISION_ID (the client stamps it on every run as `metadata.revision_id`).
 *
 * A user's own LangSmith is kept: with a LANGSMITH_API_KEY (or LANGCHAIN_API_KEY) secret, their
 * key, endpoint and project stay as they set them and every run goes to both, their endpoint and
 * the trace front, through LANGSMITH_RUNS_ENDPOINTS (array form; write targets they listed there
 * themselves stay first). Nothing is added when the deployment turns tracing off
 * (`source_config.tracing: false`) or a secret says LANGSMITH_TRACING (or LANGCHAIN_TRACING_V2) false.
 */
export function tracingEnvironment(input: {
  secrets: ReadonlyArray<{ name: string; value: string }>;
  /** `source_config.tracing` (null: on). */
  enabled: boolean | null;
  front: { endpoint: string; apiKey: string };
  project: string;
  revisionId: string;
}): Record<string, string> {
  const secret = (...names: string[]) => {
    for (const name of names) {
      const found = input.secrets.find((s) => s.name === name);
      if (found) return found.value;
    }
    return undefined;
  };
  const off = (secret('LANGSMITH_TRACING', 'LANGCHAIN_TRACING_V2') ?? '').trim().toLowerCase() === 'false';
  if (input.enabled === false || off) return {};
  const base = { LANGSMITH_TRACING: 'true', LANGCHAIN_REVISION_ID: input.revisionId };
  const slipway: RunsEndpoint = {
    api_url: input.front.endpoint,
    api_key: input.front.apiKey,
    project_name: input.project,
  };
  const ownKey = secret('LANGSMITH_API_KEY', 'LANGCHAIN_API_KEY');
  if (!ownKey)
    return {
      ...base,
      LANGSMITH_ENDPOINT: input.front.endpoint,
      LANGSMITH_API_KEY: input.front.apiKey,
      LANGSMITH_PROJECT: input.project,
    };
  const listed = runsEndpoints(secret('LANGSMITH_RUNS_ENDPOINTS'));
  const ownProject = secret('LANGSMITH_PROJECT', 'LANGCHAIN_PROJECT');
  const own: RunsEndpoint[] = listed.length
    ? listed
    : [
        {
          api_url: secret('LANGSMITH_ENDPOINT', 'LANGCHAIN_ENDPOINT') ?? LANGSMITH_DEFAULT_ENDPOINT,
          api_key: ownKey,
          ...(ownProject ? { project_name: ownProject } : {}),
        },
      ];
  return { ...base, LANGSMITH_RUNS_ENDPOINTS: JSON.stringify([...own, slipway]) };
}

/** The write targets a user's LANGSMITH_RUNS_ENDPOINTS lists (array form, or the `{url: key}` form), or none. */
function runsEndpoints(value: string | undefined): RunsEndpoint[] {
  if (!value) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    if (Array.isArray(parsed))
      return parsed.filter((e): e is RunsEndpoint => typeof e?.api_url === 'string' && typeof e?.api_key === 'string');
    if (parsed && typeof parsed === 'object') {
      return Object.entries(parsed).flatMap(([url, key]) =>
        typeof key === 'string' ? [{ api_url: url, api_key: key }] : [],
      );
    }
  } catch {
    // Not JSON: the client would ignore it too.
  }
  return [];
}
