/**
 * What the runtime's parts share: the floor below `process/`, `container/` and `sandbox/`, which
 * import from here and never from each other for these.
 */

/**
 * Anything that runs SQL: a TypeORM DataSource or EntityManager fits. The runtime needs only
 * this, so it stays free of the persistence library.
 */
export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<any>;
}

/**
 * The runtime's writes of `deployments`, of the columns it keeps: the process runtime's serving
 * port and the sandbox's uid. Their SQL is libs/db's, the one writer of that row
 * (`DeploymentRepository.claimServingPort`, `claimSandboxUid`); the services hand a
 * `DeploymentRepository` in, so the runtime still imports nothing of libs/db.
 */
export interface DeploymentRuntimeWrites {
  /** Records `port` as the deployment's serving port unless it has one; a port taken meanwhile rejects (23505). */
  claimServingPort(deploymentId: string, port: number): Promise<void>;
  /** Records `uid` as the deployment's sandbox uid if its uid is still `previous`; a uid taken meanwhile rejects (23505). */
  claimSandboxUid(deploymentId: string, uid: number, previous: number | null): Promise<void>;
}

export type InstanceStatus = 'starting' | 'running' | 'stopping' | 'exited';

/**
 * An API instance serves the deployment's traffic; a queue worker (a revision whose
 * `resource_spec.queue_enabled` holds) runs an agent server's graphs and receives no traffic.
 */
export type InstanceRole = 'api' | 'queue';

/** One `runtime_processes` row: a server process of a revision, on this machine. */
export interface InstanceRecord {
  id: string;
  deploymentId: string;
  revisionId: string;
  role: InstanceRole;
  /** Which of the revision's instances of its role (0-based); part of the log file name. */
  index: number;
  pid: number | null;
  port: number;
  status: InstanceStatus;
  logPath: string;
  /** Where it is reached: its sandbox's address (null: the runtime host, unsandboxed). */
  address: string | null;
}

/** Thrown when an artifact directory is missing or malformed; the message says what is wrong. */
export class ArtifactError extends Error {
  override name = 'ArtifactError';
}
