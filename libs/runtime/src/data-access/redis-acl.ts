import type { Redis } from 'ioredis';

/** Thrown when the Redis server cannot give a deployment a user of its own. */
export class DataAccessError extends Error {
  override name = 'DataAccessError';
}

/** A deployment's Redis ACL user and its key prefix (REDIS_PREFIX): the same string. */
export const deploymentRedisUser = (deploymentId: string) => `slipway-d-${deploymentId}`;

/**
 * The Redis database every deployment's keys live in, whatever database REDIS_URL names for the
 * control plane's own: a deployment's user may not SELECT, so its connections stay in the one
 * they start in, 0 (REDIS_URI names no database; the Redis front selects none).
 */
export const DEPLOYMENT_REDIS_DB = 0;

/**
 * `redisUrl` (the control plane's REDIS_URL) with DEPLOYMENT_REDIS_DB for its database: where
 * the platform reads (run counters) and removes (teardown) deployments' keys.
 */
export function deploymentKeyspaceUrl(redisUrl: string): string {
  const url = new URL(redisUrl);
  url.pathname = `/${DEPLOYMENT_REDIS_DB}`;
  url.searchParams.delete('db');
  return url.toString();
}

/**
 * Commands a deployment's user may not run: the one list both its ACL rules (on top of the
 * `@admin`, `@dangerous` and `@scripting` categories, which hold most of these already) and the
 * Redis front (which refuses them itself, so the list holds even on a looser ACL) apply. Each is
 * denied because it reaches past the deployment's own keys and channels:
 * - server administration and state: CONFIG, DEBUG, SHUTDOWN, MODULE, SAVE…, replication, FAILOVER;
 * - what other clients do: MONITOR, CLIENT (LIST, INFO, KILL, TRACKING's broadcast of every key
 *   change…), SLOWLOG and LATENCY (other tenants' commands), INFO (`keyspace`, clients), MEMORY,
 *   LASTSAVE, ROLE, WAIT (replicas), CLUSTER;
 * - other tenants' channels: PUBSUB (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB list or
 *   count every channel on the server; `&` channel rules do not apply to them);
 * - the whole keyspace, which key patterns do not confine: KEYS, SCAN, RANDOMKEY, DBSIZE,
 *   FLUSHALL, FLUSHDB, SWAPDB, SELECT (a deployment's keys live in DEPLOYMENT_REDIS_DB), MOVE,
 *   MIGRATE, SORT (its BY and GET patterns read any key), RESTORE;
 * - scripts and functions (a busy script blocks the shared server);
 * - ACL (other users) and RESET (it falls back to the `default` user).
 * Every name must be a command Redis 7.0 knows: an unknown one fails the whole ACL SETUSER.
 */
export const DENIED_REDIS_COMMANDS = [
  'flushall',
  'flushdb',
  'config',
  'keys',
  'scan',
  'randomkey',
  'dbsize',
  'select',
  'swapdb',
  'move',
  'migrate',
  'sort',
  'sort_ro',
  'restore',
  'restore-asking',
  'script',
  'eval',
  'evalsha',
  'eval_ro',
  'evalsha_ro',
  'fcall',
  'fcall_ro',
  'function',
  'debug',
  'shutdown',
  'acl',
  'monitor',
  'client',
  'module',
  'save',
  'bgsave',
  'bgrewriteaof',
  'replicaof',
  'slaveof',
  'sync',
  'psync',
  'replconf',
  'failover',
  'cluster',
  'wait',
  'reset',
  'info',
  'latency',
  'memory',
  'slowlog',
  'lastsave',
  'role',
  'pubsub',
  'pfdebug',
  'pfselftest',
] as const;

/**
 * Subcommands of denied commands that stay allowed: CLIENT subcommands client libraries send
 * while connecting, harmless to the server. (CLIENT SETINFO exists from Redis 7.2 only, and
 * naming an unknown command fails the whole SETUSER; clients ignore its refusal.) ACL WHOAMI
 * tells a connection which user it is: its own name.
 */
export const ALLOWED_REDIS_SUBCOMMANDS = ['client|setname', 'client|getname', 'client|id', 'acl|whoami'] as const;

const DENIED = new Set<string>(DENIED_REDIS_COMMANDS);
const ALLOWED = new Set<string>(ALLOWED_REDIS_SUBCOMMANDS);

/**
 * Whether a deployment's user may not run the command `name` (lower case) with first argument
 * `sub` (lower case; undefined when not known yet: a denied command is then refused whole).
 */
export function deniedRedisCommand(name: string, sub: string | undefined): boolean {
  if (!DENIED.has(name)) return false;
  return sub === undefined || !ALLOWED.has(`${name}|${sub}`);
}

/** The ACL rules of a deployment's user: its key and channel prefix, everything else denied. */
export function deploymentAclRules(deploymentId: string, password: string): string[] {
  const prefix = deploymentRedisUser(deploymentId);
  return [
    'reset',
    'on',
    `>${password}`,
    `~${prefix}:*`,
    `&${prefix}:*`,
    '+@all',
    '-@admin',
    '-@dangerous',
    '-@scripting',
    ...DENIED_REDIS_COMMANDS.map((c) => `-${c}`),
    ...ALLOWED_REDIS_SUBCOMMANDS.map((c) => `+${c}`),
  ];
}

/** True when the server knows ACLs (Redis 6 or later). */
export async function redisHasAcl(redis: Redis): Promise<boolean> {
  try {
    await redis.call('ACL', 'WHOAMI');
    return true;
  } catch (err) {
    if (/unknown command/i.test((err as Error).message)) return false;
    throw err;
  }
}

/**
 * Creates (or resets to the current rules and password) the deployment's ACL user. Throws
 * DataAccessError when the server has no ACLs: handing out the control plane's own connection
 * instead would give the app every queue.
 */
export async function ensureDeploymentRedisUser(redis: Redis, deploymentId: string, password: string): Promise<string> {
  if (!(await redisHasAcl(redis))) {
    throw new DataAccessError(
      'The Redis server has no ACL support (Redis 6 or later is needed), so this deployment cannot get a Redis user of its own.',
    );
  }
  const user = deploymentRedisUser(deploymentId);
  try {
    await redis.call('ACL', 'SETUSER', user, ...deploymentAclRules(deploymentId, password));
  } catch (err) {
    // ioredis's error carries the command's arguments, the password among them: never let it out.
    throw new Error(`ACL SETUSER ${user} failed: ${(err as Error).message}`);
  }
  return user;
}

/**
 * Removes every key under the deployment's prefix (run counters, streams, whatever the app
 * kept), with SCAN and UNLINK in batches. `redis` must be on DEPLOYMENT_REDIS_DB
 * (deploymentKeyspaceUrl). Idempotent; returns how many keys went.
 */
export async function removeDeploymentRedisKeys(redis: Redis, deploymentId: string): Promise<number> {
  const match = `${deploymentRedisUser(deploymentId).replace(/[*?[\]\\]/g, '\\$&')}:*`;
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    if (keys.length) removed += await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
  return removed;
}

/** Drops the deployment's ACL user and cuts its connections. Idempotent. */
export async function dropDeploymentRedisUser(redis: Redis, deploymentId: string): Promise<void> {
  if (!(await redisHasAcl(redis))) return;
  await redis.call('ACL', 'DELUSER', deploymentRedisUser(deploymentId));
}
