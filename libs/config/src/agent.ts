/**
 * The listener agent's environment (it runs in a user's cluster, far from the control plane's
 * database and Redis, so it shares none of the control plane's settings). Parsed once, like
 * the control plane's, into a frozen typed object that lists every bad key.
 */
import Joi from 'joi';
import { ConfigError } from './config-error.js';

export interface AgentConfig {
  /**
   * Base URL of the Slipway api, e.g. `https://slipway.example.com`. `https` unless the host is
   * loopback or `SLIPWAY_AGENT_ALLOW_INSECURE_HTTP` is true: the agent sends its key on every call.
   */
  apiUrl: string;
  listenerId: string;
  /** An API key bound to this listener (`slipway keys create --listener <id>`). */
  apiKey: string;
  /** Path of a kubeconfig; null means in-cluster (the pod's service account). */
  kubeconfigPath: string | null;
  /** Pause between polls while connected; every poll is also the listener's heartbeat. */
  pollIntervalMs: number;
  /** Ceiling of the backoff while the control plane is unreachable. */
  maxBackoffMs: number;
  /** Deadline of one call to the control plane. */
  requestTimeoutMs: number;
  logLevel: string;
  shutdownTimeoutMs: number;
}

const schema = Joi.object({
  SLIPWAY_API_URL: Joi.string().uri({ scheme: ['http', 'https'] }).required(),
  SLIPWAY_LISTENER_ID: Joi.string().guid().required(),
  SLIPWAY_API_KEY: Joi.string().min(20).max(256).pattern(/^\S+$/).required(),
  KUBECONFIG: Joi.string(),
  SLIPWAY_AGENT_POLL_INTERVAL_MS: Joi.number().integer().min(50).default(5_000),
  SLIPWAY_AGENT_MAX_BACKOFF_MS: Joi.number().integer().min(50).default(60_000),
  SLIPWAY_AGENT_REQUEST_TIMEOUT_MS: Joi.number().integer().min(50).default(10_000),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  SLIPWAY_SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(50).default(10_000),
  SLIPWAY_AGENT_ALLOW_INSECURE_HTTP: Joi.boolean().default(false),
}).unknown(true);

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
  return '"SLIPWAY_API_URL" must be an https URL (plain http sends the agent\'s key in clear): use https, a loopback address, or set SLIPWAY_AGENT_ALLOW_INSECURE_HTTP=true';
}

export function loadAgentConfig(env: NodeJS.ProcessEnv = process.env): Readonly<AgentConfig> {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const { value, error } = schema.validate(present, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(error.details.map((d) => d.message));
  const insecure = insecureUrlProblem(value.SLIPWAY_API_URL, value.SLIPWAY_AGENT_ALLOW_INSECURE_HTTP);
  if (insecure) throw new ConfigError([insecure]);
  return Object.freeze({
    apiUrl: (value.SLIPWAY_API_URL as string).replace(/\/+$/, ''),
    listenerId: value.SLIPWAY_LISTENER_ID,
    apiKey: value.SLIPWAY_API_KEY,
    kubeconfigPath: value.KUBECONFIG ?? null,
    pollIntervalMs: value.SLIPWAY_AGENT_POLL_INTERVAL_MS,
    maxBackoffMs: value.SLIPWAY_AGENT_MAX_BACKOFF_MS,
    requestTimeoutMs: value.SLIPWAY_AGENT_REQUEST_TIMEOUT_MS,
    logLevel: value.LOG_LEVEL,
    shutdownTimeoutMs: value.SLIPWAY_SHUTDOWN_TIMEOUT_MS,
  });
}
