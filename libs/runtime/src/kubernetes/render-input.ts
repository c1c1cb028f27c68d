import type {
  V1Deployment,
  V1Ingress,
  V1ObjectMeta,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import type { ResourceSpec, SecretEntry } from '@slipway/domain';
import type { StoreCredentials } from './credentials.js';
import { k8sName, STATEFULSET_NAME_MAX } from './k8s-name.js';
import type { PodPolicy } from './pod-policy.js';

/* What render.ts and stores.ts share: the input, the object names, ports, and the metadata every object carries. */

/** Everything a revision's desired state is rendered from: its snapshot, nothing live. */
export interface RenderInput {
  deploymentId: string;
  /** A valid deployment name (docs/api.md, Deployments); object names derive from it. */
  deploymentName: string;
  revisionId: string;
  namespace: string;
  imageUri: string;
  /** The revision's resolved spec (every field filled). */
  resourceSpec: ResourceSpec;
  /** Name and value of each secret; values land in the env Secret and nowhere else. */
  secrets: readonly SecretEntry[];
  /** Variables the platform sets (tracing, `tracingEnvironment`): over the secrets, in the env Secret too. */
  environment?: Readonly<Record<string, string>>;
  /** Name of the deployment's own Postgres database. */
  databaseName: string;
  credentials: StoreCredentials;
  /** When set, an Ingress routes its host (and path) to the API server. */
  customUrl?: string | null;
  images?: Partial<StoreImages>;
  /** The listener's relaxations of the pod policy (pod-policy.ts); none by default. */
  podPolicy?: PodPolicy | null;
}

export interface StoreImages {
  postgres: string;
  redis: string;
}

export const DEFAULT_STORE_IMAGES: Readonly<StoreImages> = { postgres: 'postgres:16-alpine', redis: 'redis:7-alpine' };

/** The objects a revision renders to; each is also a plain KubernetesObject. */
export type RenderedObject =
  | V1ServiceAccount
  | V1Secret
  | V1Service
  | V1Deployment
  | V1StatefulSet
  | V2HorizontalPodAutoscaler
  | V1Ingress;

/** Names of the rendered objects, by role. */
export interface ObjectNames {
  api: string;
  /**
   * The deployment's own ServiceAccount, without a token. Suffixed: a deployment named `default`
   * must not take over the namespace's default ServiceAccount.
   */
  serviceAccount: string;
  queue: string;
  db: string;
  redis: string;
  envSecret: string;
  credentialsSecret: string;
  tlsSecret: string;
}

export const SERVER_PORT = 8000;
export const SERVICE_PORT = 80;
export const POSTGRES_PORT = 5432;
export const REDIS_PORT = 6379;
export const POSTGRES_USER = 'slipway';
export const HPA_CPU_UTILIZATION = 80;
/** The rollout deadline (10 min by default, docs/api.md, Statuses): past it Kubernetes reports no progress. */
export const PROGRESS_DEADLINE_SECONDS = 600;

export type Component = 'api' | 'queue' | 'postgres' | 'redis';

export function objectNames(deploymentName: string): ObjectNames {
  return {
    api: k8sName(deploymentName),
    serviceAccount: k8sName(deploymentName, 'sa'),
    queue: k8sName(deploymentName, 'queue'),
    db: k8sName(deploymentName, 'db', STATEFULSET_NAME_MAX),
    redis: k8sName(deploymentName, 'redis'),
    envSecret: k8sName(deploymentName, 'env'),
    credentialsSecret: k8sName(deploymentName, 'credentials'),
    tlsSecret: k8sName(deploymentName, 'tls'),
  };
}

export function sorted<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(
    Object.keys(record)
      .sort()
      .map((k) => [k, record[k]!]),
  );
}

/** Labels that select a component's pods; never changes between revisions (selectors are immutable). */
export function selectorLabels(input: RenderInput, component: Component): Record<string, string> {
  return { 'app.kubernetes.io/instance': input.deploymentId, 'app.kubernetes.io/component': component };
}

/** The user's labels, then ours: ours win, because selectors and ownership depend on them. */
export function labelsOf(input: RenderInput, component: Component, withRevision: boolean): Record<string, string> {
  return sorted({
    ...input.resourceSpec.labels,
    'app.kubernetes.io/name': input.deploymentName,
    ...selectorLabels(input, component),
    'app.kubernetes.io/managed-by': 'slipway',
    ...(withRevision ? { 'slipway.dev/revision-id': input.revisionId } : {}),
  });
}

/** User annotations go on what serves the agent (its workloads, pods, Service; the Ingress only if the listener allows). */
export function metadata(input: RenderInput, name: string, component: Component, annotate: boolean): V1ObjectMeta {
  const annotations = sorted(input.resourceSpec.annotations);
  return {
    name,
    namespace: input.namespace,
    labels: labelsOf(input, component, true),
    ...(annotate && Object.keys(annotations).length ? { annotations } : {}),
  };
}
