import type { Redis } from 'ioredis';

/** Thrown when the Redis server cannot give a deployment a user of its own. */
export class DataAccessError extends Error {
  override name = 'DataAccessError';
}

/** A deployment's Redis ACL user and its key prefix (REDIS_PREFIX): the same string. */
export const deploymentRedisUser = (deploymentId: string) => `slipway-d-${deploymentId}`;

/**
 * Commands a deployment's user may not run, on top of the `@admin`, `@dangerous` and
 * `@scripting` categories: server administration, whole-keyspace operations, key-name
 * enumeration (which ignores key patterns), scripts (a busy script blocks the shared server),
 * and RESET (it falls back to the `default` user).
 */
export const DENIED_REDIS_COMMANDS = [
  'flushall', 'flushdb', 'config', 'keys', 'scan', 'randomkey', 'script', 'eval', 'evalsha', 'eval_ro', 'evalsha_ro',
  'fcall', 'fcall_ro', 'function', 'debug', 'shutdown', 'acl', 'monitor', 'client', 'module', 'save', 'bgsave',
  'bgrewriteaof', 'replicaof', 'slaveof', 'migrate', 'sync', 'psync', 'swapdb', 'move', 'reset', 'info', 'latency', 'memory', 'slowlog',
] as const;

/**
 * CLIENT subcommands client libraries send while connecting; harmless to the server. (CLIENT
 * SETINFO exists from Redis 7.2 only, and naming an unknown command fails the whole SETUSER;
 * clients ignore its refusal.) ACL WHOAMI tells a connection which user it is: its own name.
 */
const ALLOWED_CLIENT_SUBCOMMANDS = ['client|setname', 'client|getname', 'client|id', 'acl|whoami'];

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
    ...ALLOWED_CLIENT_SUBCOMMANDS.map((c) => `+${c}`),
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
    throw new DataAccessError('The Redis server has no ACL support (Redis 6 or later is needed), so this deployment cannot get a Redis user of its own.');
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

/** Drops the deployment's ACL user and cuts its connections. Idempotent. */
export async function dropDeploymentRedisUser(redis: Redis, deploymentId: string): Promise<void> {
  if (!(await redisHasAcl(redis))) return;
  await redis.call('ACL', 'DELUSER', deploymentRedisUser(deploymentId));
}
