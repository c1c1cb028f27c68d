/**
 * The process and its stores: where it listens, what it connects to, where it keeps local state,
 * and the process-wide knobs (docs/configuration.md, Server and stores).
 */
import path from 'node:path';
import Joi from 'joi';
import { int, oneOf, optional, setting, text } from './setting.js';

export type NodeEnv = 'development' | 'test' | 'production';

/** `true`/`false`, a hop count, or addresses and subnets (`loopback, 10.0.0.0/8`), as Express takes them. */
export function trustProxyOf(value: string): boolean | number | string {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const serverSettings = {
  nodeEnv: oneOf<NodeEnv>(
    'NODE_ENV',
    ['development', 'test', 'production'],
    'development',
    '`production` makes `SLIPWAY_SECRETS_KEY` mandatory',
  ),
  host: text('HOST', '127.0.0.1', 'interface the api listens on (`0.0.0.0` in containers)'),
  port: int('PORT', 8124, 'HTTP port of the api', { min: 0, max: 65535 }),
  databaseUrl: setting<string>(
    'DATABASE_URL',
    Joi.string()
      .uri({ scheme: ['postgres', 'postgresql'] })
      .default('postgres://postgres:postgres@127.0.0.1:5432/slipway'),
    'Postgres; `npm start` creates the database if missing',
  ),
  redisUrl: setting<string>(
    'REDIS_URL',
    Joi.string()
      .uri({ scheme: ['redis', 'rediss'] })
      .default('redis://127.0.0.1:6379/0'),
    'Redis for the job queues',
  ),
  /** Prefix of every BullMQ key this deployment owns; tests use one per file. */
  queuePrefix: setting<string>(
    'SLIPWAY_QUEUE_PREFIX',
    Joi.string()
      .pattern(/^[A-Za-z0-9_-]+$/)
      .default('slipway'),
    'prefix of every Redis key Slipway owns',
  ),
  bootstrapApiKey: setting<string | null>(
    'SLIPWAY_BOOTSTRAP_API_KEY',
    Joi.string().min(20).max(256).pattern(/^\S+$/),
    'admin key registered at start (at least 20 characters); generated and printed once when unset on a fresh database',
    { read: (raw) => raw ?? null },
  ),
  logLevel: oneOf('LOG_LEVEL', LOG_LEVELS, 'info', '`fatal` … `trace`, or `silent`'),
  bodyLimitBytes: int('SLIPWAY_BODY_LIMIT_BYTES', 1024 * 1024, 'largest JSON body (413 above)', { min: 1024 }),
  /** How long an api process reuses an API-key lookup; a revoke elsewhere takes effect within this. */
  apiKeyCacheTtlMs: int(
    'SLIPWAY_API_KEY_CACHE_TTL_MS',
    500,
    'how long an api process reuses an API-key lookup (at most 1000): a key revoked through another api process stops working within this',
    { min: 0, max: 1_000 },
  ),
  /** Express `trust proxy`: which hops' X-Forwarded-For is believed for the client address. */
  trustProxy: setting<boolean | number | string>(
    'SLIPWAY_TRUST_PROXY',
    Joi.string().default('loopback'),
    'proxies whose `X-Forwarded-For` gives the client address: `true`, `false`, a hop count, or addresses/subnets',
    { read: trustProxyOf },
  ),
  shutdownTimeoutMs: int('SLIPWAY_SHUTDOWN_TIMEOUT_MS', 10_000, 'hard deadline of a graceful shutdown', { min: 100 }),
  builderConcurrency: int('SLIPWAY_BUILDER_CONCURRENCY', 2, 'builds one builder process runs at once', {
    min: 1,
    max: 64,
  }),
  /** Where builders keep the agent server's installed dependencies; `<data dir>/cache/agent-server-host` when unset (index.ts). */
  agentServerHostCache: optional(
    'SLIPWAY_AGENT_SERVER_HOST_CACHE',
    Joi.string(),
    "the agent server's installed dependencies, installed once and linked (sandboxed builds) or copied into every LangGraph.js artifact; builders may share it",
    '`<data dir>/cache/agent-server-host`',
  ),
  deployerConcurrency: int('SLIPWAY_DEPLOYER_CONCURRENCY', 8, 'rollouts one deployer process runs at once', {
    min: 1,
    max: 256,
  }),
  /** Port of a worker's /healthz and /metrics; 0 turns it off. */
  workerHealthPort: int(
    'SLIPWAY_WORKER_HEALTH_PORT',
    0,
    '`/healthz`, `/readyz` and `/metrics` of a builder/deployer (`slipway_worker_jobs_total` and ' +
      '`slipway_worker_job_duration_seconds` by queue, job and outcome; ' +
      'the deployer adds `slipway_runtime_instance_events_total`); 0: off',
    { min: 0, max: 65535 },
  ),
  /** `local` integrations may only list repositories under this directory (docs/api.md, Integrations). */
  localReposRoot: setting<string>(
    'SLIPWAY_LOCAL_REPOS_ROOT',
    Joi.string().default('./.slipway/repos'),
    '`local` integrations may only list repositories under this directory',
    { read: (raw: string) => path.resolve(raw) },
  ),
  /** Largest accepted source tarball (docs/api.md, Uploads and the deploy CLIs: 200 MB). */
  uploadMaxBytes: int('SLIPWAY_UPLOAD_MAX_BYTES', 200 * 1024 * 1024, 'largest source tarball (413 above)', {
    min: 1024,
    shown: '200 MiB',
  }),
  /** How long a signed upload URL stays valid (docs/api.md, Uploads and the deploy CLIs). */
  uploadUrlTtlMs: int('SLIPWAY_UPLOAD_URL_TTL_MS', 60 * 60_000, 'how long an upload URL stays valid', { min: 50 }),
  /** `hosted`: responses name sources as the hosted control plane does (docs/api.md, Deployments). */
  sourceNames: oneOf(
    'SLIPWAY_SOURCE_NAMES',
    ['canonical', 'hosted'],
    'canonical',
    '`hosted`: responses name sources `github`, `external_docker`, `internal_source`, ' +
      '`internal_docker` instead of `repohost`, `external_container`, `upload`, ' +
      '`internal_docker` (input takes both always)',
  ),
};

/** Inputs of values Config computes (`loadConfig`): the public URL, the data dir and the secrets keys. */
export const derivedInputs = {
  publicUrl: optional(
    'SLIPWAY_PUBLIC_URL',
    Joi.string().uri({ scheme: ['http', 'https'] }),
    'base URL clients reach the api at (used in generated links and the OpenAPI servers)',
    '`http://127.0.0.1:$PORT`',
  ),
  dataDir: text(
    'SLIPWAY_DATA_DIR',
    './.slipway',
    "local state: the generated secrets key, the bootstrap key file, builds, artifacts, uploads (0700, the control plane's alone)",
  ),
};
