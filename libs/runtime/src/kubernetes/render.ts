import type {
  KubernetesObject,
  V1Container,
  V1Deployment,
  V1EnvVar,
  V1Ingress,
  V1LocalObjectReference,
  V1ObjectMeta,
  V1PodTemplateSpec,
  V1Probe,
  V1Secret,
  V1Service,
  V1StatefulSet,
  V1Volume,
  V1VolumeMount,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import type { ResourceSpec, SecretEntry } from '@slipway/domain';
import type { StoreCredentials } from './credentials.js';
import { k8sName, STATEFULSET_NAME_MAX } from './k8s-name.js';
import { cpuQuantity, memoryQuantity, storageQuantity } from './quantities.js';

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
  /** Name of the deployment's own Postgres database. */
  databaseName: string;
  credentials: StoreCredentials;
  /** When set, an Ingress routes its host (and path) to the API server. */
  customUrl?: string | null;
  images?: Partial<StoreImages>;
}

export interface StoreImages {
  postgres: string;
  redis: string;
}

export const DEFAULT_STORE_IMAGES: Readonly<StoreImages> = { postgres: 'postgres:16-alpine', redis: 'redis:7-alpine' };

/** The objects a revision renders to; each is also a plain KubernetesObject. */
export type RenderedObject = V1Secret | V1Service | V1Deployment | V1StatefulSet | V2HorizontalPodAutoscaler | V1Ingress;

/** Names of the rendered objects, by role. */
export interface ObjectNames {
  api: string;
  queue: string;
  db: string;
  redis: string;
  envSecret: string;
  credentialsSecret: string;
  tlsSecret: string;
}

export const SERVER_PORT = 8000;
const SERVICE_PORT = 80;
const POSTGRES_PORT = 5432;
const REDIS_PORT = 6379;
const POSTGRES_USER = 'slipway';
const HPA_CPU_UTILIZATION = 80;
/** The rollout deadline (10 min by default, docs/api.md, Statuses): past it Kubernetes reports no progress. */
const PROGRESS_DEADLINE_SECONDS = 600;

type Component = 'api' | 'queue' | 'postgres' | 'redis';

export function objectNames(deploymentName: string): ObjectNames {
  return {
    api: k8sName(deploymentName),
    queue: k8sName(deploymentName, 'queue'),
    db: k8sName(deploymentName, 'db', STATEFULSET_NAME_MAX),
    redis: k8sName(deploymentName, 'redis'),
    envSecret: k8sName(deploymentName, 'env'),
    credentialsSecret: k8sName(deploymentName, 'credentials'),
    tlsSecret: k8sName(deploymentName, 'tls'),
  };
}

/**
 * Renders a revision into the Kubernetes objects that run it: its env Secret, the API server
 * (Deployment, Service, HPA), the queue workers (Deployment, HPA), its own Postgres
 * (StatefulSet with a volume claim, headless Service) and Redis (Deployment, Service), and an
 * Ingress when the deployment has a custom URL. Pure and deterministic: maps are emitted with
 * sorted keys (the spec comes back from jsonb in Postgres' key order, not the caller's), so the
 * same snapshot always renders byte-identical JSON and a re-apply is a no-op. Objects come in
 * apply order: what a workload references exists before the workload.
 */
export function renderManifests(input: RenderInput): RenderedObject[] {
  const names = objectNames(input.deploymentName);
  const spec = input.resourceSpec;
  const objects: RenderedObject[] = [
    credentialsSecret(input, names),
    envSecret(input, names),
    service(input, names.db, 'postgres', { name: 'postgres', number: POSTGRES_PORT }, { userAnnotations: false, headless: true }),
    postgresStatefulSet(input, names),
    service(input, names.redis, 'redis', { name: 'redis', number: REDIS_PORT }, { userAnnotations: false }),
    redisDeployment(input, names),
    service(input, names.api, 'api', { name: 'http', number: SERVICE_PORT }, { userAnnotations: true }),
    serverDeployment(input, names, 'api'),
  ];
  const apiHpa = autoscaler(input, names.api, 'api', spec.min_scale, spec.max_scale);
  if (apiHpa) objects.push(apiHpa);
  objects.push(serverDeployment(input, names, 'queue'));
  const queueHpa = autoscaler(input, names.queue, 'queue', spec.queue_min_scale, spec.queue_max_scale);
  if (queueHpa) objects.push(queueHpa);
  if (input.customUrl) objects.push(ingress(input, names, input.customUrl));
  return objects;
}

/**
 * The same objects without any secret material (Secrets keep their identity, lose their data):
 * enough for an agent to delete them, and safe to hand out where values must not appear.
 */
export function withoutSecretData(objects: readonly KubernetesObject[]): KubernetesObject[] {
  return objects.map((o) => {
    if (o.kind !== 'Secret') return o;
    const { data: _data, stringData: _stringData, ...rest } = o as V1Secret;
    return rest;
  });
}

// ------------------------------------------------------------------ metadata

function sorted<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.keys(record).sort().map((k) => [k, record[k]!]));
}

/** Labels that select a component's pods; never changes between revisions (selectors are immutable). */
function selectorLabels(input: RenderInput, component: Component): Record<string, string> {
  return { 'app.kubernetes.io/instance': input.deploymentId, 'app.kubernetes.io/component': component };
}

/** The user's labels, then ours: ours win, because selectors and ownership depend on them. */
function labelsOf(input: RenderInput, component: Component, withRevision: boolean): Record<string, string> {
  return sorted({
    ...input.resourceSpec.labels,
    'app.kubernetes.io/name': input.deploymentName,
    ...selectorLabels(input, component),
    'app.kubernetes.io/managed-by': 'slipway',
    ...(withRevision ? { 'slipway.dev/revision-id': input.revisionId } : {}),
  });
}

/** User annotations go on what serves the agent (its workloads, pods, Service, Ingress). */
function metadata(input: RenderInput, name: string, component: Component, annotate: boolean): V1ObjectMeta {
  const annotations = sorted(input.resourceSpec.annotations);
  return {
    name,
    namespace: input.namespace,
    labels: labelsOf(input, component, true),
    ...(annotate && Object.keys(annotations).length ? { annotations } : {}),
  };
}

// ------------------------------------------------------------------ secrets

function credentialsSecret(input: RenderInput, names: ObjectNames): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadata(input, names.credentialsSecret, 'postgres', false),
    type: 'Opaque',
    stringData: {
      POSTGRES_DB: input.databaseName,
      POSTGRES_PASSWORD: input.credentials.databasePassword,
      POSTGRES_USER,
      REDIS_PASSWORD: input.credentials.redisPassword,
    },
  };
}

/** The server's environment: the deployment's secrets plus where its own stores live. */
function envSecret(input: RenderInput, names: ObjectNames): V1Secret {
  const user = encodeURIComponent(POSTGRES_USER);
  const dbPassword = encodeURIComponent(input.credentials.databasePassword);
  const redisPassword = encodeURIComponent(input.credentials.redisPassword);
  const values: Record<string, string> = {};
  for (const secret of input.secrets) values[secret.name] = secret.value;
  // Ours win over a user secret of the same name: the server must reach its own stores.
  values.DATABASE_URI = `postgres://${user}:${dbPassword}@${names.db}:${POSTGRES_PORT}/${encodeURIComponent(input.databaseName)}`;
  values.REDIS_URI = `redis://:${redisPassword}@${names.redis}:${REDIS_PORT}/0`;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadata(input, names.envSecret, 'api', false),
    type: 'Opaque',
    stringData: sorted(values),
  };
}

// ------------------------------------------------------------------ API server and queue workers

const httpProbe = (overrides: Partial<V1Probe> = {}): V1Probe => ({
  httpGet: { path: '/ok', port: 'http' },
  periodSeconds: 10,
  timeoutSeconds: 5,
  ...overrides,
});

function serverContainer(input: RenderInput, names: ObjectNames, role: 'api' | 'queue'): V1Container {
  const spec = input.resourceSpec;
  const queue = role === 'queue';
  const env: V1EnvVar[] = [
    { name: 'PORT', value: String(SERVER_PORT) },
    { name: 'SLIPWAY_ROLE', value: role },
  ];
  const container: V1Container = {
    name: queue ? 'queue-worker' : 'api-server',
    image: input.imageUri,
    env,
    envFrom: [{ secretRef: { name: names.envSecret } }],
    resources: {
      requests: { cpu: cpuQuantity(queue ? spec.queue_cpu : spec.cpu), memory: memoryQuantity(queue ? spec.queue_memory_mb : spec.memory_mb) },
      limits: {
        cpu: cpuQuantity(queue ? spec.queue_cpu_limit : spec.cpu_limit),
        memory: memoryQuantity(queue ? spec.queue_memory_limit_mb : spec.memory_limit_mb),
      },
    },
  };
  if (!queue) {
    container.ports = [{ name: 'http', containerPort: SERVER_PORT, protocol: 'TCP' }];
    container.readinessProbe = httpProbe({ failureThreshold: 3 });
    container.livenessProbe = httpProbe({ initialDelaySeconds: 10, failureThreshold: 6 });
  }
  if (spec.volume_mounts.length) container.volumeMounts = spec.volume_mounts as V1VolumeMount[];
  return container;
}

/**
 * The pod of the API server or a queue worker: both run the same image with the same volumes,
 * init containers, sidecars, pull secrets and service account. A sidecar with
 * `restartPolicy: Always` is a native sidecar, which Kubernetes only accepts among the init
 * containers; it goes first there, so the user's init containers can already use it (e.g. a
 * database proxy for migrations). Other sidecars run as extra containers beside the server.
 */
function serverPod(input: RenderInput, names: ObjectNames, role: 'api' | 'queue'): V1PodTemplateSpec {
  const spec = input.resourceSpec;
  const sidecars = spec.sidecars as V1Container[];
  const native = sidecars.filter((c) => c.restartPolicy === 'Always');
  const regular = sidecars.filter((c) => c.restartPolicy !== 'Always');
  const initContainers = [...native, ...(spec.init_containers as V1Container[])];
  const annotations = sorted(spec.annotations);
  return {
    metadata: {
      // The revision id changes the pod template on every revision, so new secrets (read only
      // at container start through envFrom) always roll out, even when the image is the same.
      labels: labelsOf(input, role, true),
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      ...(spec.service_account_name ? { serviceAccountName: spec.service_account_name } : {}),
      ...(spec.image_pull_secrets.length ? { imagePullSecrets: spec.image_pull_secrets.map((s) => ({ name: s.name }) as V1LocalObjectReference) } : {}),
      ...(initContainers.length ? { initContainers } : {}),
      containers: [serverContainer(input, names, role), ...regular],
      ...(spec.volumes.length ? { volumes: spec.volumes as V1Volume[] } : {}),
    },
  };
}

/**
 * The API server and the queue worker run the same image as two Deployments. No pod of the old
 * version goes away before a new one is ready: a revision that never becomes healthy leaves the
 * previous one serving (docs/api.md, Statuses, DEPLOY_FAILED).
 */
function serverDeployment(input: RenderInput, names: ObjectNames, role: 'api' | 'queue'): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(input, names[role], role, true),
    spec: {
      replicas: role === 'api' ? input.resourceSpec.min_scale : input.resourceSpec.queue_min_scale,
      selector: { matchLabels: selectorLabels(input, role) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      progressDeadlineSeconds: PROGRESS_DEADLINE_SECONDS,
      template: serverPod(input, names, role),
    },
  };
}

/**
 * A ClusterIP Service in front of one role's pods. Postgres' is headless: it is the
 * StatefulSet's governing Service, and its name resolves to the one pod.
 */
function service(
  input: RenderInput,
  name: string,
  role: 'api' | 'postgres' | 'redis',
  port: { name: string; number: number },
  options: { userAnnotations: boolean; headless?: boolean },
): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(input, name, role, options.userAnnotations),
    spec: {
      ...(options.headless ? { clusterIP: 'None' } : { type: 'ClusterIP' }),
      selector: selectorLabels(input, role),
      ports: [{ name: port.name, port: port.number, targetPort: port.name, protocol: 'TCP' }],
    },
  };
}

/**
 * The HPA between min and max scale. None at a minimum of 0: an HPA cannot scale to zero (its
 * minReplicas must be at least 1 without an alpha feature gate), so 0 means "stopped" and the
 * Deployment's replicas (0) stand alone.
 */
function autoscaler(input: RenderInput, target: string, component: 'api' | 'queue', min: number, max: number): V2HorizontalPodAutoscaler | null {
  if (min < 1) return null;
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: metadata(input, target, component, false),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: target },
      minReplicas: min,
      maxReplicas: Math.max(min, max),
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: HPA_CPU_UTILIZATION } } }],
    },
  };
}

function ingress(input: RenderInput, names: ObjectNames, customUrl: string): V1Ingress {
  const url = new URL(customUrl);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: metadata(input, names.api, 'api', true),
    spec: {
      // https: the certificate is expected in this Secret (e.g. issued by cert-manager, which
      // the user's annotations can request); Slipway does not issue certificates.
      ...(url.protocol === 'https:' ? { tls: [{ hosts: [url.hostname], secretName: names.tlsSecret }] } : {}),
      rules: [
        {
          host: url.hostname,
          http: {
            paths: [{ path: url.pathname || '/', pathType: 'Prefix', backend: { service: { name: names.api, port: { name: 'http' } } } }],
          },
        },
      ],
    },
  };
}

// ------------------------------------------------------------------ Postgres and Redis

const fromCredentials = (names: ObjectNames, name: string, key: string): V1EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: names.credentialsSecret, key } },
});

/**
 * The deployment's own Postgres. Its pod template carries no revision id: a new revision of
 * the agent must not restart its database. The claim goes with the StatefulSet when that is
 * deleted (teardown deletes the database, docs/api.md, Deployments), but survives scaling.
 */
function postgresStatefulSet(input: RenderInput, names: ObjectNames): V1StatefulSet {
  const spec = input.resourceSpec;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: metadata(input, names.db, 'postgres', false),
    spec: {
      serviceName: names.db,
      replicas: 1,
      selector: { matchLabels: selectorLabels(input, 'postgres') },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
      template: {
        metadata: { labels: labelsOf(input, 'postgres', false) },
        spec: {
          containers: [
            {
              name: 'postgres',
              image: input.images?.postgres ?? DEFAULT_STORE_IMAGES.postgres,
              args: ['-c', `max_connections=${spec.db_max_connections}`],
              env: [
                fromCredentials(names, 'POSTGRES_USER', 'POSTGRES_USER'),
                fromCredentials(names, 'POSTGRES_PASSWORD', 'POSTGRES_PASSWORD'),
                fromCredentials(names, 'POSTGRES_DB', 'POSTGRES_DB'),
                // A subdirectory: the volume's root may hold lost+found, which initdb refuses.
                { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
              ],
              ports: [{ name: 'postgres', containerPort: POSTGRES_PORT, protocol: 'TCP' }],
              resources: {
                requests: { cpu: cpuQuantity(spec.db_cpu), memory: memoryQuantity(spec.db_memory_mb) },
                limits: { cpu: cpuQuantity(spec.db_cpu_limit), memory: memoryQuantity(spec.db_memory_limit_mb) },
              },
              readinessProbe: {
                exec: { command: ['pg_isready', '-U', POSTGRES_USER, '-d', input.databaseName] },
                periodSeconds: 10,
                timeoutSeconds: 5,
              },
              volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: storageQuantity(spec.db_storage_gi) } } },
        },
      ],
    },
  };
}

/**
 * The deployment's own Redis: one replica, replaced (not rolled) so two never run at once.
 * `maxmemory` stays below the container limit to leave room for Redis' own overhead, and
 * `noeviction` makes a full Redis refuse writes instead of silently dropping queued work.
 */
function redisDeployment(input: RenderInput, names: ObjectNames): V1Deployment {
  const memoryMb = input.resourceSpec.redis_memory_mb;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(input, names.redis, 'redis', false),
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selectorLabels(input, 'redis') },
      template: {
        metadata: { labels: labelsOf(input, 'redis', false) },
        spec: {
          containers: [
            {
              name: 'redis',
              image: input.images?.redis ?? DEFAULT_STORE_IMAGES.redis,
              // $(REDIS_PASSWORD) is expanded by Kubernetes from the container's env.
              args: [
                '--requirepass',
                '$(REDIS_PASSWORD)',
                '--maxmemory',
                `${Math.max(1, Math.floor(memoryMb * 0.8))}mb`,
                '--maxmemory-policy',
                'noeviction',
                '--save',
                '',
                '--appendonly',
                'no',
              ],
              env: [fromCredentials(names, 'REDIS_PASSWORD', 'REDIS_PASSWORD')],
              ports: [{ name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' }],
              resources: { requests: { memory: memoryQuantity(memoryMb) }, limits: { memory: memoryQuantity(memoryMb) } },
              readinessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 10 },
            },
          ],
        },
      },
    },
  };
}
