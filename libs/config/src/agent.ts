/**
 * The listener agent's environment (it runs in a user's cluster, far from the control plane's
 * database and Redis, so it shares none of the control plane's settings). Parsed once, like
 * the control plane's, into a frozen typed object that lists every bad key.
 */
import Joi from 'joi';
import { ConfigError } from './config-error.js';
import { validateEnvironment } from './environment.js';
import { LOG_LEVELS } from './server.js';
import { ms, oneOf, schemaKeysOf, setting, valuesOf, type ValuesOf } from './setting.js';

/** The agent's settings, declared once (docs/configuration.md, Listener agent). */
export const agentSettings = {
  /**
   * Base URL of the Slipway api, e.g. `https://slipway.example.com`. `https` unless the host is
   * loopback or `SLIPWAY_AGENT_ALLOW_INSECURE_HTTP` is true: the agent sends its key on every call.
   */
  apiUrl: setting<string>(
    'SLIPWAY_API_URL',
    Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    "the api's base URL; `https`, or plain `http` only to a loopback host (`127.0.0.0/8`, `::1`, `localhost`). " +
      'The agent never follows a redirect (a 3xx is an error: its key is never re-sent elsewhere), ' +
      "so name the api's final URL",
    { read: (raw: string) => raw.replace(/\/+$/, '') },
  ),
  listenerId: setting<string>('SLIPWAY_LISTENER_ID', Joi.string().guid().required(), 'the listener this agent serves'),
  /** An API key bound to this listener (`slipway keys create --listener <id>`). */
  apiKey: setting<string>(
    'SLIPWAY_API_KEY',
    Joi.string().min(20).max(256).pattern(/^\S+$/).required(),
    'a key bound to that listener',
  ),
  /** Path of a kubeconfig; null means in-cluster (the pod's service account). */
  kubeconfigPath: setting<string | null>(
    'KUBECONFIG',
    Joi.string(),
    "a kubeconfig file; unset, the pod's service account is used",
    {
      read: (raw) => raw ?? null,
      shown: 'unset: in-cluster',
    },
  ),
  /** Pause between polls while connected; every poll is also the listener's heartbeat. */
  pollIntervalMs: ms(
    'SLIPWAY_AGENT_POLL_INTERVAL_MS',
    5_000,
    "pause between polls (each is also the listener's heartbeat)",
  ),
  /** Ceiling of the backoff while the control plane is unreachable. */
  maxBackoffMs: ms('SLIPWAY_AGENT_MAX_BACKOFF_MS', 60_000, 'longest pause while the api is unreachable'),
  /** Deadline of one call to the control plane. */
  requestTimeoutMs: ms('SLIPWAY_AGENT_REQUEST_TIMEOUT_MS', 10_000, 'deadline of one call to the api'),
  logLevel: oneOf('LOG_LEVEL', LOG_LEVELS, 'info', '`fatal` … `trace`, or `silent`'),
  shutdownTimeoutMs: ms('SLIPWAY_SHUTDOWN_TIMEOUT_MS', 10_000, 'hard deadline of a graceful shutdown'),
  allowInsecureHttp: setting<boolean>(
    'SLIPWAY_AGENT_ALLOW_INSECURE_HTTP',
    Joi.boolean().default(false),
    '`true` allows a plain `http` `SLIPWAY_API_URL` off loopback (the key then travels in clear: only on a network you trust)',
  ),
};

export type AgentConfig = Omit<ValuesOf<typeof agentSettings>, 'allowInsecureHttp'>;

const schema = Joi.object(schemaKeysOf(agentSettings)).unknown(true);

/** 127.0.0.0/8, ::1 and localhost: a plain-http hop that never leaves the machine (or the pod). */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * The agent's key travels with every call: over plain http anyone on the path reads it. Only a
 * loopback URL (a sidecar proxy, a port-forward, a test) or an explicit opt-in may use http.
 */
function insecureUrlProblem(apiUrl: string, allowInsecure: boolean): string | null {
  const url = new URL(apiUrl);
  if (url.protocol === 'https:' || allowInsecure || isLoopbackHost(url.hostname)) return null;
  return (
    '"SLIPWAY_API_URL" must be an https URL (plain http sends the agent\'s key in clear): use https, ' +
    'a loopback address, or set SLIPWAY_AGENT_ALLOW_INSECURE_HTTP=true'
  );
}

export function loadAgentConfig(env: NodeJS.ProcessEnv = process.env): Readonly<AgentConfig> {
  const { allowInsecureHttp, ...config } = valuesOf(agentSettings, validateEnvironment(schema, env));
  const insecure = insecureUrlProblem(config.apiUrl, allowInsecureHttp);
  if (insecure) throw new ConfigError([insecure]);
  return Object.freeze(config);
}
