import type { ContainerImage } from './container/container-instances.js';
import type { Artifact } from './process/artifact.js';

/**
 * What a runtime driver needs to run one revision's instances; immutable, like the revision.
 * The deployer builds it (artifact, environment, limits); the driver only runs it.
 */
export interface StartInstancesInput {
  deploymentId: string;
  revisionId: string;
  /** Shown in deploy logs (the artifact's path or image reference). */
  artifactRef: string;
  /** The built artifact a process runs (absent for an image revision). */
  artifact?: Artifact;
  /** Lines for the deploy log before the start (the artifact's warnings, how the image was obtained). */
  notes?: { line: string; level: 'info' | 'warn' }[];
  /** The app's environment (see `instanceEnvironment`); the driver adds PORT, PATH and HOME. */
  env: Record<string, string>;
  /** Masked wherever the driver quotes an instance's output. */
  secretValues: string[];
  /** How many instances run: `resource_spec.min_scale`, at least 1, at most `max_scale`. */
  scale: number;
  /** Per-instance limits from `resource_spec` (absent: the driver's defaults). */
  limits: { memoryMb?: number; cpu?: number };
  /**
   * Queue workers (`resource_spec.queue_enabled`): `scale` more processes of the same artifact,
   * limited by the `queue_*` fields, that run the graphs and receive no traffic; the API
   * instances then only serve. Absent: every instance serves and runs graphs.
   */
  queue?: { scale: number; limits: { memoryMb?: number; cpu?: number } };
  /**
   * Ports of the deployment's data-access fronts: the only ports of the host its sandboxed
   * instances may connect to (each from its own namespace's address).
   */
  frontPorts: number[];
  /** An image revision (internal_docker, external_container without a listener): each instance runs it as a container. */
  image?: ContainerImage;
}

export interface StartInstancesOptions {
  /** Interruption and deadline of the rollout phase. */
  signal: AbortSignal;
  /** End of the rollout phase (epoch ms). */
  deadline: number;
  /** A line for the revision's deploy log. */
  log: (line: string, level?: 'info' | 'warn' | 'error') => void;
}

/** An instance a driver started; opaque to callers beyond these fields. */
export interface RuntimeInstance {
  id: string;
  /** An API instance or a queue worker (see StartInstancesInput.queue). */
  role: 'api' | 'queue';
  /** Which instance of the revision and role (0-based). */
  index: number;
}

export type StartInstancesOutcome<I extends RuntimeInstance> =
  | { ok: true; instances: I[] }
  | { ok: false; message: string };

/**
 * Traffic moved to new instances, pending the caller's decision: `confirm` once the revision is
 * recorded as deployed (the previous instances drain and stop), `revert` when that did not happen
 * (the previous instances serve again and the new ones stop). Exactly one of them is called;
 * until then the driver keeps the deployment's other work (supervision, teardown) waiting.
 */
export interface TrafficSwitch {
  confirm(): Promise<void>;
  revert(): Promise<void>;
}

export interface InstanceHealth {
  id: string;
  revisionId: string;
  role: 'api' | 'queue';
  index: number;
  /** Answers its health probe and (an API instance) receives traffic. */
  healthy: boolean;
}

/**
 * A runtime driver (docs/architecture.md, Runtimes): the one owner of a runtime's processes.
 * The rollout processor owns revision statuses and calls the driver; the driver never touches a
 * status and never calls back. A process driver implements it for local processes; a Kubernetes
 * driver can implement it later.
 */
export interface RuntimeDriver<I extends RuntimeInstance = RuntimeInstance> {
  /** True while this driver may act (e.g. holds the single-node lock). */
  readonly isOwner: boolean;
  /** Takes over: adopts instances recorded as running and keeps supervising them until `release`. */
  adopt(): Promise<void>;
  /** Stops supervising and serving; instances keep running for the next owner. */
  release(): Promise<void>;
  /** Starts a revision's instances and waits until each answers its health probe; traffic untouched. */
  startInstances(input: StartInstancesInput, options: StartInstancesOptions): Promise<StartInstancesOutcome<I>>;
  /** Sends the deployment's traffic to `instances` (see TrafficSwitch). */
  switchTraffic(input: StartInstancesInput, instances: I[]): Promise<TrafficSwitch>;
  /** Stops the given instances, or a whole deployment (instances, traffic, files) for teardown. */
  stop(target: { instances: I[] } | { deploymentId: string }): Promise<void>;
  /** The deployment's instances and whether each is healthy. */
  health(deploymentId: string): Promise<InstanceHealth[]>;
}
