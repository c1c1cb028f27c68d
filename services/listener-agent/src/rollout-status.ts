import type { V1Deployment, V1Pod, V1StatefulSet } from '@kubernetes/client-node';

export type Rollout =
  | { state: 'progressing'; message: string }
  | { state: 'done'; message: string }
  | { state: 'failed'; message: string };

/**
 * Container waiting reasons that mean the rollout will not succeed by waiting: the image
 * cannot be pulled or named, or the server keeps crashing. `ErrImagePull` and
 * `CreateContainerConfigError` are left out: the kubelet reports them on a first, possibly
 * transient attempt (a registry hiccup, a Secret applied a moment later) before backing off.
 */
export const FATAL_WAITING_REASONS: ReadonlySet<string> = new Set([
  'ImagePullBackOff',
  'CrashLoopBackOff',
  'InvalidImageName',
]);

/**
 * Where a revision's rollout stands, from what the cluster reports: failed as soon as a pod of
 * this revision (or a store pod, which belongs to every revision) waits for a fatal reason, or a
 * Deployment's `Progressing` condition says `ProgressDeadlineExceeded`; done when every
 * Deployment observed its latest spec and all its replicas are updated and available (and no old
 * ones are left), and every StatefulSet is ready; progressing otherwise. Messages carry the
 * Kubernetes reason and message.
 */
export function rolloutOf(
  revisionId: string,
  deployments: V1Deployment[],
  statefulSets: V1StatefulSet[],
  pods: V1Pod[],
  revisionLabel: string,
): Rollout {
  for (const pod of pods) {
    const revision = pod.metadata?.labels?.[revisionLabel];
    if (revision && revision !== revisionId) continue;
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const s of statuses) {
      const waiting = s.state?.waiting;
      if (waiting?.reason && FATAL_WAITING_REASONS.has(waiting.reason)) {
        return {
          state: 'failed',
          message: `${waiting.reason}: pod ${pod.metadata?.name}, container ${s.name}: ${waiting.message ?? waiting.reason}`,
        };
      }
    }
  }
  const waitingFor: string[] = [];
  for (const d of deployments) {
    const name = d.metadata?.name;
    const progressing = d.status?.conditions?.find((c) => c.type === 'Progressing');
    if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
      return {
        state: 'failed',
        message: `ProgressDeadlineExceeded: Deployment ${name}: ${progressing.message ?? ''}`.trim(),
      };
    }
    const want = d.spec?.replicas ?? 1;
    const s = d.status ?? {};
    const observed = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
    if (!observed || (s.updatedReplicas ?? 0) < want || (s.replicas ?? 0) > want || (s.availableReplicas ?? 0) < want) {
      waitingFor.push(
        `Deployment ${name}: ${s.updatedReplicas ?? 0}/${want} updated, ${s.availableReplicas ?? 0} available`,
      );
    }
  }
  for (const st of statefulSets) {
    const want = st.spec?.replicas ?? 1;
    const s = st.status;
    const observed = (s?.observedGeneration ?? 0) >= (st.metadata?.generation ?? 0);
    const updated = !s?.updateRevision || s.updateRevision === s.currentRevision;
    if (!observed || !updated || (s?.readyReplicas ?? 0) < want)
      waitingFor.push(`StatefulSet ${st.metadata?.name}: ${s?.readyReplicas ?? 0}/${want} ready`);
  }
  if (waitingFor.length) return { state: 'progressing', message: `Waiting for ${waitingFor.join('; ')}` };
  return {
    state: 'done',
    message: `Rolled out: ${deployments.length} Deployment(s) and ${statefulSets.length} StatefulSet(s) available.`,
  };
}
