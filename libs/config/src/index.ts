/**
 * The one place that reads the environment. Every process parses it once, through one joi
 * schema, into a frozen typed object; a bad environment fails fast with every problem listed.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { secureDataDir } from './data-dir.js';
import { isIP } from 'node:net';
import path from 'node:path';
import Joi from 'joi';
import type { Quotas, ResourceCeilings } from '@slipway/domain';
import { ConfigError } from './config-error.js';
import { listOf } from './lists.js';
import { registrySchemaKeys, registrySettingsOf, type RegistrySettings } from './registry.js';
import { ceilingsOf, sandboxSchemaKeys, sandboxSettingsOf, type SandboxSettings } from './sandbox.js';

export type NodeEnv = 'development' | 'test' | 'production';

export interface SecretsKey {
  /** The raw 32-byte AES-256 key. */
  key: Buffer;
  /** Where it came from, so start-up can warn about a generated key. */
  origin: 'env' | 'file' | 'generated';
}

export interface Config {
  nodeEnv: NodeEnv;
  host: string;
  port: number;
  publicUrl: string;
  databaseUrl: string;
  redisUrl: string;
  /** Prefix of every BullMQ key this deployment owns; tests use one per file. */
  queuePrefix: string;
  bootstrapApiKey: string | null;
  secretsKey: SecretsKey;
  /** Keys that were current before a rotation: still used to decrypt, never to encrypt. */
  previousSecretsKeys: Buffer[];
  dataDir: string;
  logLevel: string;
  bodyLimitBytes: number;
  /** How long an api process reuses an API-key lookup; a revoke elsewhere takes effect within this. */
  apiKeyCacheTtlMs: number;
  jwt: JwtSettings | null;
  /** Request budgets (docs/api.md, Errors: 429 with Retry-After), shared by every api process through Redis. */
  rateLimit: RateLimitSettings;
  /** Express `trust proxy`: which hops' X-Forwarded-For is believed for the client address. */
  trustProxy: boolean | number | string;
  shutdownTimeoutMs: number;
  /** Phase deadlines and reconciler periods (docs/api.md, Statuses), all in milliseconds. */
  pipeline: PipelineTimings;
  builderConcurrency: number;
  deployerConcurrency: number;
  /** Port of a worker's /healthz and /metrics; 0 turns it off. */
  workerHealthPort: number;
  /** `local` integrations may only list repositories under this directory (docs/api.md, Integrations). */
  localReposRoot: string;
  /**
   * User-supplied URLs the server fetches (forge `api_url`s, outbound webhooks): hosts, IPs and
   * CIDR ranges that may be reached over plain http and at private addresses (@slipway/net).
   */
  outbound: { allowHosts: string[] };
  /** Outbound webhook deliveries (docs/api.md, Events and webhooks). */
  webhooks: {
    /** First retry after this; each next one waits twice as long (15 attempts span about a day at 5 s). */
    retryBaseMs: number;
    /** A receiver must answer within this. */
    timeoutMs: number;
    /** How often the fan-out looks for new events when no notification woke it. */
    fanoutPollMs: number;
  };
  /** Largest accepted source tarball (docs/api.md, Uploads and the deploy CLIs: 200 MB). */
  uploadMaxBytes: number;
  /** How long a signed upload URL stays valid (docs/api.md, Uploads and the deploy CLIs). */
  uploadUrlTtlMs: number;
  /** Process runtime: where deployments' processes and serving proxies listen. */
  runtime: {
    /** Interface deployed apps' serving proxies bind to. */
    host: string;
    /** Host put in deployments' `url`; differs from `host` when binding all interfaces. */
    publicHost: string;
    portMin: number;
    portMax: number;
    /** An instance's log file is rotated past this size (one rotated file is kept). */
    logFileMb: number;
  };
  /** Default per-workspace quotas (docs/operations.md, Quotas and retention); overridable per workspace. */
  quotas: Quotas;
  /** The operator's ceilings on any resource_spec (docs/operations.md, Sandbox): over one, create and PATCH answer 422. */
  ceilings: ResourceCeilings;
  /** CONNECTION LIMIT of every deployment's database role (docs/operations.md, Deployment databases). */
  deploymentDbConnectionLimit: number;
  /** The retention pass (docs/operations.md, Quotas and retention). */
  retention: RetentionSettings;
  /** The sandbox of builds and apps (docs/operations.md, Sandbox). */
  sandbox: SandboxSettings;
  /** The built-in image registry and its token auth (docs/operations.md, The image registry). */
  registry: RegistrySettings;
  /** `hosted`: responses name sources as the hosted control plane does (docs/api.md, Deployments). */
  sourceNames: 'canonical' | 'hosted';
}

/** Bearer JWTs from one identity provider, verified against its JWKS. */
export interface JwtSettings {
  issuer: string;
  jwksUrl: string;
  /** Required `aud` when set. */
  audience: string | null;
  /** Signature algorithms accepted; anything else (`none`, HMAC) is refused. */
  algorithms: string[];
  /** A token issued (`iat`) longer ago than this is refused, whatever its `exp`. */
  maxTokenAgeSeconds: number;
}

/** Budgets per window; 0 turns that budget off. */
export interface RateLimitSettings {
  windowSeconds: number;
  /** Requests per API key (or JWT subject). */
  perKey: number;
  /** Requests per listener agent key: agents poll their desired state. */
  perListenerAgent: number;
  /** Requests per client address that carry no credential. */
  perAddress: number;
  /** Failed authentications per client address before it is locked out… */
  authFailures: number;
  /** …for the rest of this window. */
  authFailureWindowSeconds: number;
}

/** How often the retention pass runs and how long finished rows are kept. */
export interface RetentionSettings {
  intervalMs: number;
  /** Events (the event feed) older than this are deleted. */
  eventsDays: number;
  /** Outbox rows sent longer ago than this are deleted. */
  outboxHours: number;
  /** Completed uploads no revision names are deleted after this many days. */
  uploadsUnusedDays: number;
}

export interface PipelineTimings {
  /** A started revision must reach Redis within this (else CREATE_FAILED). */
  enqueueDeadlineMs: number;
  buildDeadlineMs: number;
  rolloutDeadlineMs: number;
  teardownDeadlineMs: number;
  /** A worker refreshes its revision's heartbeat this often… */
  heartbeatIntervalMs: number;
  /** …and a heartbeat older than this means the worker died. */
  heartbeatStaleMs: number;
  reconcileIntervalMs: number;
  /** A listener silent this long turns its deployments UNKNOWN. */
  listenerSilenceMs: number;
  /** A deployment without activity this long turns UNUSED. */
  idleAfterMs: number;
  /** How many times a phase is re-enqueued after its worker died, before the revision fails. */
  maxPhaseAttempts: number;
}

const SECRETS_KEY_FILE = 'secrets.key';

/** Canonical base64 of exactly 32 bytes. Buffer.from() alone skips junk characters silently. */
function isBase64Key(value: string): boolean {
  return /^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0 && Buffer.from(value, 'base64').length === 32;
}

// One rule, so a bad key is one problem, not "not base64" and "not 32 bytes" for the same key.
const base64Key = Joi.string()
  .custom((value: string, helpers) => (isBase64Key(value) ? value : helpers.error('key.invalid')))
  .messages({ 'key.invalid': '{{#label}} must be a base64-encoded 32-byte key' });

const MINUTE = 60_000;
/** Asymmetric JWS algorithms: a JWKS holds public keys, so HMAC (and `none`) never apply. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
const budget = (fallback: number) => Joi.number().integer().min(0).default(fallback);
const ms = (fallback: number) => Joi.number().integer().min(50).default(fallback);

const schema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'test', 'production').default('development'),
  HOST: Joi.string().default('127.0.0.1'),
  PORT: Joi.number().integer().min(0).max(65535).default(8124),
  SLIPWAY_PUBLIC_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .default('postgres://postgres:postgres@127.0.0.1:5432/slipway'),
  REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).default('redis://127.0.0.1:6379/0'),
  SLIPWAY_QUEUE_PREFIX: Joi.string()
    .pattern(/^[A-Za-z0-9_-]+$/)
    .default('slipway'),
  SLIPWAY_BOOTSTRAP_API_KEY: Joi.string().min(20).max(256).pattern(/^\S+$/),
  SLIPWAY_SECRETS_KEY: base64Key,
  SLIPWAY_PREVIOUS_SECRETS_KEYS: Joi.string()
    .custom((value: string, helpers) =>
      value
        .split(',')
        .filter(Boolean)
        .every((k) => isBase64Key(k.trim()))
        ? value
        : helpers.error('key.length'),
    )
    .messages({ 'key.length': '{{#label}} must be a comma-separated list of 32-byte base64 keys' }),
  SLIPWAY_DATA_DIR: Joi.string().default('./.slipway'),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  SLIPWAY_BODY_LIMIT_BYTES: Joi.number().integer().min(1024).default(1024 * 1024),
  SLIPWAY_API_KEY_CACHE_TTL_MS: Joi.number().integer().min(0).max(1_000).default(500),
  SLIPWAY_JWT_ISSUER: Joi.string().uri(),
  SLIPWAY_JWT_JWKS_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  SLIPWAY_JWT_AUDIENCE: Joi.string(),
  SLIPWAY_JWT_ALGORITHMS: Joi.string()
    .custom((value: string, helpers) =>
      listOf(value).length && listOf(value).every((a) => (JWT_ALGORITHMS as readonly string[]).includes(a)) ? value : helpers.error('alg.invalid'),
    )
    .messages({ 'alg.invalid': `{{#label}} must be a comma-separated list of ${JWT_ALGORITHMS.join(', ')}` })
    .default(JWT_ALGORITHMS.join(',')),
  SLIPWAY_JWT_MAX_AGE_SECONDS: Joi.number().integer().min(60).default(24 * 60 * 60),
  SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: Joi.number().integer().min(1).max(24 * 60 * 60).default(60),
  SLIPWAY_RATE_LIMIT_PER_KEY: budget(1_200),
  SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT: budget(3_000),
  SLIPWAY_RATE_LIMIT_PER_ADDRESS: budget(600),
  SLIPWAY_RATE_LIMIT_AUTH_FAILURES: budget(30),
  SLIPWAY_RATE_LIMIT_AUTH_FAILURE_WINDOW_SECONDS: Joi.number().integer().min(1).max(24 * 60 * 60).default(15 * 60),
  SLIPWAY_TRUST_PROXY: Joi.string().default('loopback'),
  SLIPWAY_SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(100).default(10_000),
  SLIPWAY_ENQUEUE_DEADLINE_MS: ms(10 * MINUTE),
  SLIPWAY_BUILD_DEADLINE_MS: ms(30 * MINUTE),
  SLIPWAY_ROLLOUT_DEADLINE_MS: ms(10 * MINUTE),
  SLIPWAY_TEARDOWN_DEADLINE_MS: ms(10 * MINUTE),
  SLIPWAY_HEARTBEAT_INTERVAL_MS: ms(5_000),
  SLIPWAY_HEARTBEAT_STALE_MS: ms(30_000),
  SLIPWAY_RECONCILE_INTERVAL_MS: ms(10_000),
  SLIPWAY_LISTENER_SILENCE_MS: ms(5 * MINUTE),
  SLIPWAY_IDLE_AFTER_MS: ms(28 * 24 * 60 * MINUTE),
  SLIPWAY_MAX_PHASE_ATTEMPTS: Joi.number().integer().min(1).max(20).default(3),
  SLIPWAY_BUILDER_CONCURRENCY: Joi.number().integer().min(1).max(64).default(2),
  SLIPWAY_DEPLOYER_CONCURRENCY: Joi.number().integer().min(1).max(256).default(8),
  SLIPWAY_WORKER_HEALTH_PORT: Joi.number().integer().min(0).max(65535).default(0),
  SLIPWAY_LOCAL_REPOS_ROOT: Joi.string().default('./.slipway/repos'),
  SLIPWAY_OUTBOUND_ALLOW_HOSTS: Joi.string()
    .custom((value: string, helpers) => (listOf(value).every(isOutboundHostEntry) ? value : helpers.error('outbound.invalid')))
    .messages({ 'outbound.invalid': '{{#label}} must be a comma-separated list of host names, IP addresses and CIDR ranges' }),
  SLIPWAY_WEBHOOK_RETRY_BASE_MS: Joi.number().integer().min(1).default(5_000),
  SLIPWAY_WEBHOOK_TIMEOUT_MS: Joi.number().integer().min(100).default(10_000),
  SLIPWAY_WEBHOOK_FANOUT_POLL_MS: Joi.number().integer().min(10).default(5_000),
  SLIPWAY_UPLOAD_MAX_BYTES: Joi.number().integer().min(1024).default(200 * 1024 * 1024),
  SLIPWAY_UPLOAD_URL_TTL_MS: ms(60 * MINUTE),
  SLIPWAY_RUNTIME_HOST: Joi.string().default('127.0.0.1'),
  SLIPWAY_RUNTIME_PUBLIC_HOST: Joi.string().hostname(),
  SLIPWAY_RUNTIME_PORT_MIN: Joi.number().integer().min(1024).max(65535).default(20_000),
  SLIPWAY_RUNTIME_PORT_MAX: Joi.number().integer().min(1024).max(65535).default(29_999),
  SLIPWAY_RUNTIME_LOG_FILE_MB: Joi.number().min(0.01).max(10_000).default(10),
  ...sandboxSchemaKeys,
  SLIPWAY_DEPLOYMENT_DB_CONNECTION_LIMIT: Joi.number().integer().min(1).max(10_000).default(100),
  SLIPWAY_QUOTA_DEPLOYMENTS: Joi.number().integer().min(0).default(100),
  SLIPWAY_QUOTA_MIN_SCALE: Joi.number().integer().min(0).max(1000).default(10),
  SLIPWAY_QUOTA_MAX_SCALE: Joi.number().integer().min(1).max(1000).default(20),
  SLIPWAY_QUOTA_UPLOADS_PER_DAY: Joi.number().integer().min(0).default(200),
  SLIPWAY_QUOTA_UPLOAD_BYTES: Joi.number().integer().min(0).default(10 * 1024 ** 3),
  SLIPWAY_QUOTA_LOG_LINES_PER_REVISION: Joi.number().integer().min(100).default(50_000),
  SLIPWAY_QUOTA_LOG_LINES_TOTAL: Joi.number().integer().min(100).default(5_000_000),
  SLIPWAY_QUOTA_ARTIFACTS_KEPT: Joi.number().integer().min(0).default(5),
  SLIPWAY_QUOTA_REGISTRY_BYTES: Joi.number().integer().min(0).default(10 * 1024 ** 3),
  ...registrySchemaKeys,
  SLIPWAY_RETENTION_INTERVAL_MS: Joi.number().integer().min(1000).default(10 * 60_000),
  SLIPWAY_RETENTION_EVENTS_DAYS: Joi.number().integer().min(1).default(30),
  SLIPWAY_RETENTION_OUTBOX_HOURS: Joi.number().integer().min(1).default(24),
  SLIPWAY_RETENTION_UNUSED_UPLOAD_DAYS: Joi.number().integer().min(1).default(7),
})
  .and('SLIPWAY_JWT_ISSUER', 'SLIPWAY_JWT_JWKS_URL')
  .unknown(true);

/** `gitea.internal`, `10.0.0.5`, `10.0.0.0/8`, `fd00::/8`. */
function isOutboundHostEntry(entry: string): boolean {
  const [ip, prefix, extra] = entry.split('/');
  if (extra !== undefined) return false;
  const version = isIP(ip!);
  if (prefix !== undefined) return version !== 0 && /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 6 ? 128 : 32);
  return version !== 0 || /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i.test(entry);
}

/** `a.b.c.d/p` (or a bare IPv4 address) with a prefix in `min`–`max`. */

/** `true`/`false`, a hop count, or addresses and subnets (`loopback, 10.0.0.0/8`), as Express takes them. */
function trustProxyOf(value: string): boolean | number | string {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}

export { ConfigError };

/**
 * Outside production an unset SLIPWAY_SECRETS_KEY is generated once into the data dir, so a
 * fresh checkout starts without ceremony and keeps decrypting what it stored across restarts.
 */
function resolveSecretsKey(fromEnv: string | undefined, nodeEnv: NodeEnv, dataDir: string): SecretsKey {
  if (fromEnv) return { key: Buffer.from(fromEnv, 'base64'), origin: 'env' };
  if (nodeEnv === 'production') {
    throw new ConfigError(['SLIPWAY_SECRETS_KEY is required when NODE_ENV=production']);
  }
  const file = path.join(dataDir, SECRETS_KEY_FILE);
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new ConfigError([`${file} does not hold a 32-byte base64 key`]);
    return { key, origin: 'file' };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // `wx` so two processes starting together cannot both write a different key.
  try {
    writeFileSync(file, key.toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return resolveSecretsKey(undefined, nodeEnv, dataDir);
    throw err;
  }
  chmodSync(file, 0o600);
  return { key, origin: 'generated' };
}

/** Parses an environment into a frozen Config. Pure apart from the dev secrets-key file. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  // An empty variable means unset: compose files and shells pass `FOO=` for "no value".
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const { value, error } = schema.validate(present, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(error.details.map((d) => d.message));
  const nodeEnv = value.NODE_ENV as NodeEnv;
  const dataDir = path.resolve(value.SLIPWAY_DATA_DIR as string);
  const port = value.PORT as number;
  const config: Config = {
    nodeEnv,
    host: value.HOST,
    port,
    publicUrl: (value.SLIPWAY_PUBLIC_URL ?? `http://127.0.0.1:${port}`).replace(/\/+$/, ''),
    databaseUrl: value.DATABASE_URL,
    redisUrl: value.REDIS_URL,
    queuePrefix: value.SLIPWAY_QUEUE_PREFIX,
    bootstrapApiKey: value.SLIPWAY_BOOTSTRAP_API_KEY ?? null,
    secretsKey: resolveSecretsKey(value.SLIPWAY_SECRETS_KEY, nodeEnv, dataDir),
    previousSecretsKeys: ((value.SLIPWAY_PREVIOUS_SECRETS_KEYS as string | undefined) ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean)
      .map((k) => Buffer.from(k, 'base64')),
    dataDir,
    logLevel: value.LOG_LEVEL,
    bodyLimitBytes: value.SLIPWAY_BODY_LIMIT_BYTES,
    apiKeyCacheTtlMs: value.SLIPWAY_API_KEY_CACHE_TTL_MS,
    jwt: value.SLIPWAY_JWT_ISSUER
      ? {
          issuer: value.SLIPWAY_JWT_ISSUER,
          jwksUrl: value.SLIPWAY_JWT_JWKS_URL,
          audience: value.SLIPWAY_JWT_AUDIENCE ?? null,
          algorithms: listOf(value.SLIPWAY_JWT_ALGORITHMS),
          maxTokenAgeSeconds: value.SLIPWAY_JWT_MAX_AGE_SECONDS,
        }
      : null,
    rateLimit: {
      windowSeconds: value.SLIPWAY_RATE_LIMIT_WINDOW_SECONDS,
      perKey: value.SLIPWAY_RATE_LIMIT_PER_KEY,
      perListenerAgent: value.SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT,
      perAddress: value.SLIPWAY_RATE_LIMIT_PER_ADDRESS,
      authFailures: value.SLIPWAY_RATE_LIMIT_AUTH_FAILURES,
      authFailureWindowSeconds: value.SLIPWAY_RATE_LIMIT_AUTH_FAILURE_WINDOW_SECONDS,
    },
    trustProxy: trustProxyOf(value.SLIPWAY_TRUST_PROXY),
    shutdownTimeoutMs: value.SLIPWAY_SHUTDOWN_TIMEOUT_MS,
    pipeline: {
      enqueueDeadlineMs: value.SLIPWAY_ENQUEUE_DEADLINE_MS,
      buildDeadlineMs: value.SLIPWAY_BUILD_DEADLINE_MS,
      rolloutDeadlineMs: value.SLIPWAY_ROLLOUT_DEADLINE_MS,
      teardownDeadlineMs: value.SLIPWAY_TEARDOWN_DEADLINE_MS,
      heartbeatIntervalMs: value.SLIPWAY_HEARTBEAT_INTERVAL_MS,
      heartbeatStaleMs: value.SLIPWAY_HEARTBEAT_STALE_MS,
      reconcileIntervalMs: value.SLIPWAY_RECONCILE_INTERVAL_MS,
      listenerSilenceMs: value.SLIPWAY_LISTENER_SILENCE_MS,
      idleAfterMs: value.SLIPWAY_IDLE_AFTER_MS,
      maxPhaseAttempts: value.SLIPWAY_MAX_PHASE_ATTEMPTS,
    },
    builderConcurrency: value.SLIPWAY_BUILDER_CONCURRENCY,
    deployerConcurrency: value.SLIPWAY_DEPLOYER_CONCURRENCY,
    workerHealthPort: value.SLIPWAY_WORKER_HEALTH_PORT,
    localReposRoot: path.resolve(value.SLIPWAY_LOCAL_REPOS_ROOT as string),
    outbound: { allowHosts: listOf(value.SLIPWAY_OUTBOUND_ALLOW_HOSTS ?? '') },
    webhooks: {
      retryBaseMs: value.SLIPWAY_WEBHOOK_RETRY_BASE_MS,
      timeoutMs: value.SLIPWAY_WEBHOOK_TIMEOUT_MS,
      fanoutPollMs: value.SLIPWAY_WEBHOOK_FANOUT_POLL_MS,
    },
    uploadMaxBytes: value.SLIPWAY_UPLOAD_MAX_BYTES,
    uploadUrlTtlMs: value.SLIPWAY_UPLOAD_URL_TTL_MS,
    runtime: {
      host: value.SLIPWAY_RUNTIME_HOST,
      publicHost: value.SLIPWAY_RUNTIME_PUBLIC_HOST ?? (['0.0.0.0', '::'].includes(value.SLIPWAY_RUNTIME_HOST) ? '127.0.0.1' : value.SLIPWAY_RUNTIME_HOST),
      portMin: value.SLIPWAY_RUNTIME_PORT_MIN,
      portMax: value.SLIPWAY_RUNTIME_PORT_MAX,
      logFileMb: value.SLIPWAY_RUNTIME_LOG_FILE_MB,
    },
    quotas: {
      deployments: value.SLIPWAY_QUOTA_DEPLOYMENTS,
      minScale: value.SLIPWAY_QUOTA_MIN_SCALE,
      maxScale: value.SLIPWAY_QUOTA_MAX_SCALE,
      uploadsPerDay: value.SLIPWAY_QUOTA_UPLOADS_PER_DAY,
      uploadBytes: value.SLIPWAY_QUOTA_UPLOAD_BYTES,
      logLinesPerRevision: value.SLIPWAY_QUOTA_LOG_LINES_PER_REVISION,
      logLinesTotal: value.SLIPWAY_QUOTA_LOG_LINES_TOTAL,
      artifactsKept: value.SLIPWAY_QUOTA_ARTIFACTS_KEPT,
      registryBytes: value.SLIPWAY_QUOTA_REGISTRY_BYTES,
    },
    ceilings: ceilingsOf(value),
    deploymentDbConnectionLimit: value.SLIPWAY_DEPLOYMENT_DB_CONNECTION_LIMIT,
    retention: {
      intervalMs: value.SLIPWAY_RETENTION_INTERVAL_MS,
      eventsDays: value.SLIPWAY_RETENTION_EVENTS_DAYS,
      outboxHours: value.SLIPWAY_RETENTION_OUTBOX_HOURS,
      uploadsUnusedDays: value.SLIPWAY_RETENTION_UNUSED_UPLOAD_DAYS,
    },
    sandbox: sandboxSettingsOf(value),
    registry: registrySettingsOf(value, dataDir, (value.SLIPWAY_PUBLIC_URL ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '')),
    sourceNames: value.SLIPWAY_SOURCE_NAMES,
  };
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

let cached: Readonly<Config> | undefined;

/** The process-wide config, parsed on first use. */
export function getConfig(): Readonly<Config> {
  cached ??= loadConfig();
  return cached;
}

/**
 * For process entry points: the config (with the data dir secured, see `secureDataDir`), or a clear list of what is wrong on stderr and exit
 * code 2 (a configuration error, not a crash).
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  try {
    const config = loadConfig(env);
    // Every service entry closes the data dir to anyone but the control plane's user.
    secureDataDir(config.dataDir);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}
export { loadAgentConfig, type AgentConfig } from './agent.js';
export { secureDataDir } from './data-dir.js';
export type { RegistrySettings } from './registry.js';
export { platformCredentials, urlPasswords } from './credentials.js';
