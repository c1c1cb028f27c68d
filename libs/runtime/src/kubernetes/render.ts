import type {
  KubernetesObject,
  V1Container,
  V1Deployment,
  V1EnvVar,
  V1Ingress,
  V1LocalObjectReference,
  V1PodSpec,
  V1PodTemplateSpec,
  V1Probe,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1VolumeMount,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import {
  restrictedContainer,
  restrictedContainerSecurity,
  restrictedPodSecurity,
  restrictedVolumes,
} from './pod-security.js';
import { cpuQuantity, memoryQuantity } from './quantities.js';
import {
  HPA_CPU_UTILIZATION,
  metadata,
  objectNames,
  POSTGRES_PORT,
  POSTGRES_USER,
  PROGRESS_DEADLINE_SECONDS,
  REDIS_PORT,
  selectorLabels,
  SERVER_PORT,
  SERVICE_PORT,
  sorted,
  labelsOf,
  type ObjectNames,
  type RenderedObject,
  type RenderInput,
} from './render-input.js';
import { postgresStatefulSet, redisDeployment } from './stores.js';

export {
  DEFAULT_STORE_IMAGES,
  objectNames,
  SERVER_PORT,
  type ObjectNames,
  type RenderedObject,
  type RenderInput,
  type StoreImages,
} from './render-input.js';

/**
 * Renders a revision into the Kubernetes objects that run it: its own ServiceAccount (no token),
 * its env Secret, the API server
 * (Deployment, Service, HPA), the queue workers (Deployment, HPA), its own Postgres
 * (StatefulSet with a volume claim, headless Service) and Redis (Deployment, Service), and an
 * Ingress when the deployment has a custom URL. Pure and deterministic: maps are emitted with
 * sorted keys (the spec comes back from jsonb in Postgres' key order, not the caller's), so the
 * same snapshot always renders byte-identical JSON and a re-apply is a no-op. Objects come in
 * apply order: what a workload references exists before the workload. Every pod meets the Pod
 * Security Standards `restricted` profile (pod-security.ts), whatever the spec holds.
 */
export function renderManifests(input: RenderInput): RenderedObject[] {
  const names = objectNames(input.deploymentName);
  const spec = input.resourceSpec;
  const objects: RenderedObject[] = [
    serviceAccount(input, names),
    credentialsSecret(input, names),
    envSecret(input, names),
    service(
      input,
      names.db,
      'postgres',
      { name: 'postgres', number: POSTGRES_PORT },
      { userAnnotations: false, headless: true },
    ),
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

// ------------------------------------------------------------------ identity and secrets

/**
 * The deployment's own identity: no role is ever bound to it, and no token is mounted, so code in
 * its pods cannot call the Kubernetes API as anyone (the listener's `pod_policy.service_account`
 * lets the spec name another, e.g. for a cloud workload identity).
 */
function serviceAccount(input: RenderInput, names: ObjectNames): V1ServiceAccount {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(input, names.serviceAccount, 'api', false),
    automountServiceAccountToken: false,
  };
}

/** Which service account a server pod runs as: its own, tokenless, unless the listener lets the spec name one. */
function podIdentity(
  input: RenderInput,
  names: ObjectNames,
): Pick<V1PodSpec, 'serviceAccountName' | 'automountServiceAccountToken'> {
  const named = input.resourceSpec.service_account_name;
  if (named && input.podPolicy?.service_account) return { serviceAccountName: named };
  return { serviceAccountName: names.serviceAccount, automountServiceAccountToken: false };
}

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

/** The server's environment: the deployment's secrets, the platform's variables (tracing) and where its own stores live. */
function envSecret(input: RenderInput, names: ObjectNames): V1Secret {
  const user = encodeURIComponent(POSTGRES_USER);
  const dbPassword = encodeURIComponent(input.credentials.databasePassword);
  const redisPassword = encodeURIComponent(input.credentials.redisPassword);
  const values: Record<string, string> = {};
  for (const secret of input.secrets) values[secret.name] = secret.value;
  Object.assign(values, input.environment);
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
    securityContext: restrictedContainerSecurity(),
    resources: {
      requests: {
        cpu: cpuQuantity(queue ? spec.queue_cpu : spec.cpu),
        memory: memoryQuantity(queue ? spec.queue_memory_mb : spec.memory_mb),
      },
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
 * init containers, sidecars, pull secrets and service account. User containers and volumes keep
 * only what the `restricted` profile allows (pod-security.ts). A sidecar with
 * `restartPolicy: Always` is a native sidecar, which Kubernetes only accepts among the init
 * containers; it goes first there, so the user's init containers can already use it (e.g. a
 * database proxy for migrations). Other sidecars run as extra containers beside the server.
 */
function serverPod(input: RenderInput, names: ObjectNames, role: 'api' | 'queue'): V1PodTemplateSpec {
  const spec = input.resourceSpec;
  const sidecars = spec.sidecars.map(restrictedContainer);
  const native = sidecars.filter((c) => c.restartPolicy === 'Always');
  const regular = sidecars.filter((c) => c.restartPolicy !== 'Always');
  const initContainers = [...native, ...spec.init_containers.map(restrictedContainer)];
  const annotations = sorted(spec.annotations);
  return {
    metadata: {
      // The revision id changes the pod template on every revision, so new secrets (read only
      // at container start through envFrom) always roll out, even when the image is the same.
      labels: labelsOf(input, role, true),
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      ...podIdentity(input, names),
      securityContext: restrictedPodSecurity(),
      ...(spec.image_pull_secrets.length
        ? { imagePullSecrets: spec.image_pull_secrets.map((s) => ({ name: s.name }) as V1LocalObjectReference) }
        : {}),
      ...(initContainers.length ? { initContainers } : {}),
      containers: [serverContainer(input, names, role), ...regular],
      ...(spec.volumes.length ? { volumes: restrictedVolumes(spec.volumes) } : {}),
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
function autoscaler(
  input: RenderInput,
  target: string,
  component: 'api' | 'queue',
  min: number,
  max: number,
): V2HorizontalPodAutoscaler | null {
  if (min < 1) return null;
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: metadata(input, target, component, false),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: target },
      minReplicas: min,
      maxReplicas: Math.max(min, max),
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: HPA_CPU_UTILIZATION } },
        },
      ],
    },
  };
}

function ingress(input: RenderInput, names: ObjectNames, customUrl: string): V1Ingress {
  const url = new URL(customUrl);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    // An ingress controller may read annotations as configuration (snippets, auth bypasses): the
    // user's go here only when the listener's pod_policy.ingress_annotations says so.
    metadata: metadata(input, names.api, 'api', input.podPolicy?.ingress_annotations === true),
    spec: {
      // https: the certificate is expected in this Secret (e.g. issued by cert-manager, which
      // the user's annotations can request); Slipway does not issue certificates.
      ...(url.protocol === 'https:' ? { tls: [{ hosts: [url.hostname], secretName: names.tlsSecret }] } : {}),
      rules: [
        {
          host: url.hostname,
          http: {
            paths: [
              {
                path: url.pathname || '/',
                pathType: 'Prefix',
                backend: { service: { name: names.api, port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
    },
  };
}
