import type {
  V1Container,
  V1ContainerPort,
  V1PodSecurityContext,
  V1SecurityContext,
  V1Volume,
} from '@kubernetes/client-node';
import { RESTRICTED_VOLUME_TYPES } from './pod-policy.js';

/**
 * What every rendered pod and container carries so that it meets the Pod Security Standards
 * `restricted` profile by construction, whatever a (possibly old, possibly hostile) resource_spec
 * snapshot holds: the API refuses escalating specs (pod-policy.ts), and the renderer never emits
 * what it refused in the first place.
 */

/** A pod's own settings: never root, the runtime's default seccomp profile; `user` for images of a known uid. */
export function restrictedPodSecurity(user?: { uid: number; gid: number }): V1PodSecurityContext {
  return {
    runAsNonRoot: true,
    ...(user ? { runAsUser: user.uid, runAsGroup: user.gid, fsGroup: user.gid } : {}),
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** A container's own settings: no privilege escalation, every capability dropped. */
export function restrictedContainerSecurity(extra: V1SecurityContext = {}): V1SecurityContext {
  return { ...extra, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
}

/** The container fields a user's init container or sidecar may carry, in the order they are emitted. */
const CONTAINER_FIELDS = [
  'name',
  'image',
  'imagePullPolicy',
  'workingDir',
  'restartPolicy',
  'command',
  'args',
  'env',
  'envFrom',
  'resources',
  'volumeMounts',
] as const;

/** securityContext fields kept from the user's; the rest is ours. */
const KEPT_SECURITY_FIELDS = ['readOnlyRootFilesystem', 'runAsUser', 'runAsGroup'] as const;

/**
 * A user's init container or sidecar with only the allow-listed fields, its ports without host
 * ports, and a securityContext that is ours except for a read-only root and a non-root uid/gid.
 */
export function restrictedContainer(user: Record<string, any>): V1Container {
  const container: Record<string, unknown> = {};
  for (const field of CONTAINER_FIELDS) if (user[field] !== undefined) container[field] = user[field];
  if (Array.isArray(user.ports) && user.ports.length) {
    container.ports = user.ports.map(
      ({ hostPort: _hostPort, hostIP: _hostIP, ...port }: V1ContainerPort & Record<string, unknown>) => port,
    );
  }
  const kept: V1SecurityContext = {};
  for (const field of KEPT_SECURITY_FIELDS) {
    const value = user.securityContext?.[field];
    if (field === 'readOnlyRootFilesystem' ? typeof value === 'boolean' : Number.isInteger(value) && value >= 1)
      (kept as Record<string, unknown>)[field] = value;
  }
  container.securityContext = restrictedContainerSecurity(kept);
  return container as unknown as V1Container;
}

/**
 * The user's volumes with their first source the `restricted` profile allows, and nothing else.
 * A volume with no such source (hostPath, nfs: the API refuses them, an old snapshot may hold
 * one) is left out, not replaced: a container mounting it makes Kubernetes refuse the workload,
 * so the rollout fails visibly instead of running with something else mounted.
 */
export function restrictedVolumes(user: ReadonlyArray<Record<string, any>>): V1Volume[] {
  return user.flatMap((volume) => {
    const source = RESTRICTED_VOLUME_TYPES.find((type) => volume[type] !== undefined);
    return source ? [{ name: volume.name, [source]: volume[source] } as V1Volume] : [];
  });
}
