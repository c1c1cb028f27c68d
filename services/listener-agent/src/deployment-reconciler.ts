import type { KubernetesObject, V1Deployment, V1Secret, V1StatefulSet } from '@kubernetes/client-node';
import { redactValues, type Logger } from '@slipway/logging';
import {
  Cluster,
  deploymentSelector,
  isPermanent,
  kubernetesMessage,
  MANAGED_KINDS,
  REVISION_LABEL,
} from './cluster.js';
import type { DesiredDeployment, Report } from './control-plane.client.js';
import { APPLIED_HASH_ANNOTATION, desiredHash, objectKey, withAppliedHash } from './object-hash.js';
import { PodLogShipper } from './pod-log-shipper.js';
import { rolloutOf } from './rollout-status.js';

/** What one deployment adds to the next report; `commit` runs once the control plane took it. */
export interface Outcome {
  revision?: Report['revisions'][number];
  deleted?: string;
  logs: Report['logs'];
  commit: () => void;
}

const nothing = (): Outcome => ({ logs: [], commit: () => {} });

/**
 * Secret values to mask in shipped logs: the deployment's secrets, and the store passwords and
 * connection URIs inside its rendered Secrets (keys naming a password or URI).
 */
function secretValuesOf(entry: DesiredDeployment): string[] {
  const values = entry.secrets.map((s) => s.value);
  for (const m of entry.manifests) {
    if (m.kind !== 'Secret') continue;
    for (const [key, value] of Object.entries((m as V1Secret).stringData ?? {}))
      if (/PASSWORD|URI|SECRET|TOKEN|KEY/i.test(key)) values.push(value);
  }
  return values;
}

/**
 * Brings one deployment of the desired state about in the cluster and says how far it got:
 * `apply` applies what changed, prunes what is no longer desired and reports the rollout;
 * `delete` removes every object of the deployment and reports it gone once nothing is left.
 */
export class DeploymentReconciler {
  /** Object key → hash last applied (or found applied) by this process. */
  private readonly applied = new Map<string, string>();
  /** Revisions whose objects were applied and pruned by this process. */
  private readonly settled = new Set<string>();
  /** Revisions already reported final, so a slow desired state does not make them report twice. */
  private readonly finished = new Set<string>();
  readonly logs: PodLogShipper;

  constructor(
    private readonly cluster: Cluster,
    private readonly log: Logger,
  ) {
    this.logs = new PodLogShipper(cluster);
  }

  async reconcile(entry: DesiredDeployment): Promise<Outcome> {
    return entry.action === 'delete' ? this.tearDown(entry) : this.rollOut(entry);
  }

  /** Forgets per-revision state of revisions no longer in the desired state. */
  retain(revisionIds: ReadonlySet<string>): void {
    for (const id of this.settled) if (!revisionIds.has(id)) this.settled.delete(id);
    for (const id of this.finished) if (!revisionIds.has(id)) this.finished.delete(id);
    this.logs.retain(revisionIds);
  }

  private async rollOut(entry: DesiredDeployment): Promise<Outcome> {
    const revisionId = entry.revision_id!;
    if (this.finished.has(revisionId)) return nothing();
    if (!this.settled.has(revisionId)) {
      try {
        const count = await this.applyChanged(entry.manifests);
        await this.prune(entry);
        this.settled.add(revisionId);
        this.log.info(
          { deploymentId: entry.deployment_id, revisionId, applied: count, objects: entry.manifests.length },
          'desired objects in place',
        );
      } catch (err) {
        if (!isPermanent(err)) throw err;
        // Kubernetes may quote the offending value, which can be a secret: mask before it leaves.
        const message = redactValues(
          `Kubernetes refused the objects: ${kubernetesMessage(err)}`,
          secretValuesOf(entry),
        );
        return this.final(revisionId, { revision_id: revisionId, status: 'DEPLOY_FAILED', message });
      }
    }
    const selector = deploymentSelector(entry.deployment_id);
    const [deployments, statefulSets, pods] = await Promise.all([
      this.readAll<V1Deployment>(entry.manifests.filter((m) => m.kind === 'Deployment')),
      this.readAll<V1StatefulSet>(entry.manifests.filter((m) => m.kind === 'StatefulSet')),
      this.cluster.pods(entry.namespace, selector),
    ]);
    const workloads = entry.manifests.filter((m) => m.kind === 'Deployment' || m.kind === 'StatefulSet').length;
    const rollout =
      deployments.length + statefulSets.length < workloads
        ? ({ state: 'progressing', message: 'Waiting for the workloads to exist.' } as const)
        : rolloutOf(revisionId, deployments, statefulSets, pods, REVISION_LABEL);
    const ours = pods.filter((p) => p.metadata?.labels?.[REVISION_LABEL] === revisionId);
    const shipped = await this.logs.collect(entry.namespace, revisionId, ours, secretValuesOf(entry));
    if (rollout.state === 'progressing') {
      return {
        revision: { revision_id: revisionId, status: 'DEPLOYING', message: rollout.message },
        logs: shipped.lines,
        commit: shipped.commit,
      };
    }
    const status = rollout.state === 'done' ? 'DEPLOYED' : 'DEPLOY_FAILED';
    this.log.info(
      { deploymentId: entry.deployment_id, revisionId, status, message: rollout.message },
      'rollout finished',
    );
    const outcome = this.final(revisionId, { revision_id: revisionId, status, message: rollout.message });
    return { ...outcome, logs: shipped.lines, commit: () => (shipped.commit(), outcome.commit()) };
  }

  private final(revisionId: string, revision: NonNullable<Outcome['revision']>): Outcome {
    return { revision, logs: [], commit: () => this.finished.add(revisionId) };
  }

  /**
   * Applies the objects whose desired hash differs from what was last applied. What this
   * process applied it remembers; otherwise (after a restart) the hash annotation on the live
   * object tells, so unchanged objects are read, never re-applied. Objects go in the rendered
   * order: what a workload references exists before the workload.
   */
  private async applyChanged(manifests: KubernetesObject[]): Promise<number> {
    let count = 0;
    for (const object of manifests) {
      const key = objectKey(object);
      const hash = desiredHash(object);
      if (this.applied.get(key) === hash) continue;
      const live = await this.cluster.read(object);
      if (live?.metadata?.annotations?.[APPLIED_HASH_ANNOTATION] !== hash) {
        await this.cluster.apply(withAppliedHash(object, hash));
        count++;
      }
      this.applied.set(key, hash);
    }
    return count;
  }

  /** Deletes the deployment's managed objects that the desired state no longer lists (an HPA at scale 0, a removed Ingress). */
  private async prune(entry: DesiredDeployment): Promise<void> {
    const wanted = new Set(entry.manifests.map(objectKey));
    for (const { apiVersion, kind } of MANAGED_KINDS) {
      if (kind === 'PersistentVolumeClaim') continue; // the StatefulSet's, never pruned while it lives
      for (const live of await this.cluster.list(
        apiVersion,
        kind,
        entry.namespace,
        deploymentSelector(entry.deployment_id),
      )) {
        if (wanted.has(objectKey(live))) continue;
        this.log.info(
          { deploymentId: entry.deployment_id, kind, name: live.metadata?.name },
          'pruning an object no longer desired',
        );
        await this.cluster.delete(live);
        this.applied.delete(objectKey(live));
      }
    }
  }

  /**
   * Deletes everything of the deployment: what the desired state lists and whatever else
   * carries its labels (objects of a revision that never served). Gone means the next list
   * finds none of its objects and none of its pods.
   */
  private async tearDown(entry: DesiredDeployment): Promise<Outcome> {
    const selector = deploymentSelector(entry.deployment_id);
    for (const object of entry.manifests) await this.cluster.delete(object);
    let left = 0;
    for (const { apiVersion, kind } of MANAGED_KINDS) {
      for (const live of await this.cluster.list(apiVersion, kind, entry.namespace, selector)) {
        await this.cluster.delete(live);
        this.applied.delete(objectKey(live));
        left++;
      }
    }
    const pods = await this.cluster.pods(entry.namespace, `app.kubernetes.io/instance=${entry.deployment_id}`);
    if (left || pods.length) {
      this.log.info({ deploymentId: entry.deployment_id, objects: left, pods: pods.length }, 'teardown in progress');
      return nothing();
    }
    for (const object of entry.manifests) this.applied.delete(objectKey(object));
    this.log.info({ deploymentId: entry.deployment_id }, 'deployment removed from the cluster');
    return { deleted: entry.deployment_id, logs: [], commit: () => {} };
  }

  private async readAll<T extends KubernetesObject>(objects: KubernetesObject[]): Promise<T[]> {
    const found = await Promise.all(objects.map((o) => this.cluster.read<T>(o)));
    return found.filter((o): o is Awaited<T> => o !== null) as T[];
  }
}
