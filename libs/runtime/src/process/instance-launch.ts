/** What ProcessRuntime.launch is asked to start, and what the instances it starts are named by. */
import type { ChildProcess } from 'node:child_process';
import type { ContainerImage } from '../container/container-instances.js';
import type { Artifact } from './artifact.js';
import type { InstanceRecord, InstanceRole } from './process-store.js';

export interface LaunchSpec {
  deploymentId: string;
  revisionId: string;
  /** An API instance (the default) or a queue worker; see InstanceRole. */
  role?: InstanceRole;
  /** Which instance of the revision and role (0-based). */
  index: number;
  /** What a process runs; absent when `image` is given. */
  artifact?: Artifact;
  /** The app's environment (see `instanceEnvironment`); PORT, PATH and HOME are added here. */
  env: Record<string, string>;
  /** Restart of an existing row: same row, same log file, same port when it is still free. */
  existing?: InstanceRecord;
  /** Per-instance limits (sandbox only). */
  limits?: { memoryMb?: number; cpu?: number };
  /** Ports of the data-access fronts (on the sandbox network's services address) the instance may connect to (sandbox only). */
  frontPorts?: number[];
  /** Run this image in a container instead of the artifact's start command. */
  image?: ContainerImage;
  /** A line for the revision's deploy log (a container start tried again); absent: not said. */
  log?: (line: string, level?: 'info' | 'warn' | 'error') => void;
}

/** An instance started by this process. */
export interface LaunchedInstance {
  record: InstanceRecord;
  /** The spawned process (null for a container: runc started it). */
  child: ChildProcess | null;
}

/** An instance's network namespace holder (SandboxNetwork), like its cgroup's name. */
export const networkOwner = (record: Pick<InstanceRecord, 'id'>) => `i-${record.id}`;

/** How logs name an instance: `instance 0`, `queue worker 1`. */
export const instanceLabel = (record: Pick<InstanceRecord, 'role' | 'index'>) =>
  `${record.role === 'queue' ? 'queue worker' : 'instance'} ${record.index}`;
