/**
 * What a workspace and a resource_spec may use (docs/configuration.md, Quotas and ceilings):
 * the default per-workspace quotas (overridable per workspace) and the operator's ceilings.
 */
import { CEILING_VARIABLES, type Quotas, type ResourceCeilings } from '@slipway/domain';
import { int, num, type Setting } from './setting.js';

const GIB = 1024 ** 3;

/** Default per-workspace quotas (docs/operations.md, Quotas and retention). */
export const quotaSettings = {
  deployments: int('SLIPWAY_QUOTA_DEPLOYMENTS', 100, 'default per-workspace quota of deployments (403 above)', {
    min: 0,
  }),
  minScale: int(
    'SLIPWAY_QUOTA_MIN_SCALE',
    10,
    'default highest `min_scale` (and `queue_min_scale`) a resource_spec may ask for',
    { min: 0, max: 1000 },
  ),
  maxScale: int(
    'SLIPWAY_QUOTA_MAX_SCALE',
    20,
    'default highest `max_scale` (and `queue_max_scale`) a resource_spec may ask for',
    { min: 1, max: 1000 },
  ),
  uploadsPerDay: int('SLIPWAY_QUOTA_UPLOADS_PER_DAY', 200, 'default upload URLs a workspace may request per 24 hours', {
    min: 0,
  }),
  uploadBytes: int('SLIPWAY_QUOTA_UPLOAD_BYTES', 10 * GIB, 'default bytes of uploads a workspace may keep stored', {
    min: 0,
    shown: '10 GiB',
  }),
  logLinesPerRevision: int(
    'SLIPWAY_QUOTA_LOG_LINES_PER_REVISION',
    50_000,
    'log lines kept per revision (retention trims the oldest)',
    { min: 100 },
  ),
  logLinesTotal: int(
    'SLIPWAY_QUOTA_LOG_LINES_TOTAL',
    5_000_000,
    'log lines kept per workspace (retention trims the oldest)',
    { min: 100 },
  ),
  artifactsKept: int(
    'SLIPWAY_QUOTA_ARTIFACTS_KEPT',
    5,
    'built artifacts kept per deployment besides the active one (retention prunes the rest; a redeploy of a pruned revision rebuilds it)',
    { min: 0 },
  ),
  registryBytes: int(
    'SLIPWAY_QUOTA_REGISTRY_BYTES',
    10 * GIB,
    'default per-workspace bytes of images in the built-in registry; past it, push tokens get no `push` (403)',
    { min: 0, shown: '10 GiB' },
  ),
  traceRetentionDays: int(
    'SLIPWAY_TRACE_RETENTION_DAYS',
    14,
    'default days of traces kept per workspace (by run start time); ' +
      'retention drops the daily partitions past the longest window in force and deletes older rows of ' +
      'workspaces with a shorter one',
    { min: 1, max: 3650 },
  ),
} satisfies Record<keyof Quotas, Setting<number>>;

/**
 * The operator's ceilings on any resource_spec (docs/operations.md, Sandbox): over one, create and PATCH answer 422
 * naming the variable.
 */
export const ceilingSettings = {
  memoryMb: int(
    CEILING_VARIABLES.memoryMb,
    16_384,
    'ceiling of the memory (MB) of every container a resource_spec asks for',
    { min: 64 },
  ),
  cpu: num(CEILING_VARIABLES.cpu, 8, 'ceiling of the CPUs of every container a resource_spec asks for', { min: 0.1 }),
  diskGi: int(CEILING_VARIABLES.diskGi, 100, 'ceiling of `db_storage_gi`', { min: 1 }),
  dbConnections: int(
    CEILING_VARIABLES.dbConnections,
    500,
    'ceiling of `db_max_connections`; a value left out is lowered to the ceiling',
    { min: 1 },
  ),
} satisfies Record<keyof ResourceCeilings, Setting<number>>;

/** Per-deployment bounds on the shared stores (docs/operations.md, Per-tenant bounds). */
export const deploymentDbSettings = {
  /**
   * CONNECTION LIMIT of every deployment's database role, and the most connections its Postgres
   * front relays at once: below the server's `max_connections` (100 by default), so one app
   * cannot take every slot. Sized for an agent server with one instance and two queue workers
   * across a rollout: six processes of up to nine connections each (the host's pool of 6, its
   * store's 2, the schema lock's 1). 20 refused the new revision's workers mid-rollout.
   */
  deploymentDbConnectionLimit: int(
    'SLIPWAY_DEPLOYMENT_DB_CONNECTION_LIMIT',
    60,
    "`CONNECTION LIMIT` of each deployment's database role and the most connections its Postgres front relays " +
      "at once (more: refused with SQLSTATE 53300); well below the server's `max_connections`, " +
      'so one deployment cannot take every slot',
    { min: 1, max: 10_000 },
  ),
  /** The most connections a deployment's Redis front relays at once (Redis ACL users have no limit of their own). */
  deploymentRedisConnectionLimit: int(
    'SLIPWAY_DEPLOYMENT_REDIS_CONNECTION_LIMIT',
    100,
    "the most connections each deployment's Redis front relays at once (more: " +
      "refused with `-ERR max number of clients reached`); well below the server's `maxclients`",
    { min: 1, max: 100_000 },
  ),
};
