import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';

/** Field manager of every apply: the owner of the fields Slipway sets. */
export const FIELD_MANAGER = 'slipway';

/** Labels every rendered object carries (libs/runtime render.ts). */
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const REVISION_LABEL = 'slipway.dev/revision-id';

/** The kinds the agent creates, hence the kinds it prunes and tears down. */
export const MANAGED_KINDS: ReadonlyArray<{ apiVersion: string; kind: string }> = [
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' },
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'v1', kind: 'Secret' },
  // The deployment's own identity (tokenless; no role is ever bound to it).
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  // Created by the StatefulSet controller from its claim templates, labelled by its selector.
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim' },
];

/** Selects every object of one deployment that Slipway manages. */
export const deploymentSelector = (deploymentId: string) =>
  `${INSTANCE_LABEL}=${deploymentId},${MANAGED_BY_LABEL}=slipway`;

export const isNotFound = (err: unknown) => err instanceof ApiException && err.code === 404;

/**
 * A refusal that retrying cannot fix (invalid object, forbidden, conflict): the rollout fails
 * with it. Anything else (5xx, network) is an outage the next poll retries.
 */
export function isPermanent(err: unknown): boolean {
  return err instanceof ApiException && err.code >= 400 && err.code < 500 && ![404, 408, 429].includes(err.code);
}

/** The message Kubernetes gave (its Status `message`), else the error's own. */
export function kubernetesMessage(err: unknown): string {
  if (err instanceof ApiException) {
    try {
      const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
      if (body?.message) return `${body.reason ? `${body.reason}: ` : ''}${body.message}`;
    } catch {
      // not a Status
    }
    return `HTTP ${err.code}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * The agent's access to its cluster: server-side apply, reads, label-selected lists, deletes
 * and pod logs, through the official client. In a pod it uses the service account; elsewhere a
 * kubeconfig.
 */
export class Cluster {
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;

  constructor(kubeconfigPath: string | null) {
    const kc = new KubeConfig();
    if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
    else kc.loadFromCluster();
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /**
   * Server-side apply as field manager `slipway`, forcing conflicts: Kubernetes documents that
   * a controller applying the objects it owns should always force, taking fields back from
   * whoever changed them by hand (kubernetes.io, Server-Side Apply, "Using Server-Side Apply
   * in a controller"). Fields of other managers that Slipway does not set stay theirs.
   */
  apply(object: KubernetesObject): Promise<KubernetesObject> {
    return this.objects.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  async read<T extends KubernetesObject = KubernetesObject>(object: KubernetesObject): Promise<T | null> {
    try {
      return (await this.objects.read(object as KubernetesObject & { metadata: { name: string } })) as T;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async list(apiVersion: string, kind: string, namespace: string, labelSelector: string): Promise<KubernetesObject[]> {
    const res = await this.objects.list(
      apiVersion,
      kind,
      namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      labelSelector,
    );
    // List items come without apiVersion and kind; put them back so they can be deleted.
    return res.items.map((item) => ({ ...item, apiVersion, kind }));
  }

  /** Deletes an object and, in the background, what it owns (ReplicaSets, pods); gone is fine. */
  async delete(object: KubernetesObject): Promise<void> {
    try {
      await this.objects.delete(object, undefined, undefined, undefined, undefined, 'Background');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async pods(namespace: string, labelSelector: string): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace, labelSelector })).items;
  }

  /** A container's log with timestamps, from `sinceSeconds` ago; null while it has not started. */
  async podLog(
    namespace: string,
    pod: string,
    container: string,
    sinceSeconds: number | undefined,
    limitBytes: number,
  ): Promise<string | null> {
    try {
      return await this.core.readNamespacedPodLog({
        namespace,
        name: pod,
        container,
        timestamps: true,
        sinceSeconds,
        limitBytes,
      });
    } catch (err) {
      if (err instanceof ApiException && (err.code === 400 || err.code === 404)) return null;
      throw err;
    }
  }
}
