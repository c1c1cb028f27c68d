import type { V1Container, V1Deployment, V1EnvVar, V1PodTemplateSpec, V1StatefulSet } from '@kubernetes/client-node';
import { restrictedContainerSecurity, restrictedPodSecurity } from './pod-security.js';
import { cpuQuantity, memoryQuantity, storageQuantity } from './quantities.js';
import {
  DEFAULT_STORE_IMAGES,
  labelsOf,
  metadata,
  POSTGRES_PORT,
  POSTGRES_USER,
  REDIS_PORT,
  selectorLabels,
  type ObjectNames,
  type RenderInput,
} from './render-input.js';

/*
 * The deployment's own stores, Postgres and Redis. They run the official Alpine images as those
 * images' own non-root users (uid/gid as the images create them), so they meet the `restricted`
 * profile too; `fsGroup` makes the data volume writable by that user.
 */
const POSTGRES_IMAGE_USER = { uid: 70, gid: 70 };
const REDIS_IMAGE_USER = { uid: 999, gid: 1000 };

/**
 * A store's pod: one container, run as the image's own user, as the deployment's tokenless
 * service account. No revision id in its labels: a new revision must not restart a store.
 */
function storePod(
  input: RenderInput,
  names: ObjectNames,
  component: 'postgres' | 'redis',
  user: { uid: number; gid: number },
  container: V1Container,
): V1PodTemplateSpec {
  return {
    metadata: { labels: labelsOf(input, component, false) },
    spec: {
      serviceAccountName: names.serviceAccount,
      automountServiceAccountToken: false,
      securityContext: restrictedPodSecurity(user),
      containers: [{ ...container, securityContext: restrictedContainerSecurity() }],
    },
  };
}

const fromCredentials = (names: ObjectNames, name: string, key: string): V1EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: names.credentialsSecret, key } },
});

/**
 * The deployment's own Postgres. Its pod template carries no revision id: a new revision of
 * the agent must not restart its database. The claim goes with the StatefulSet when that is
 * deleted (teardown deletes the database, docs/api.md, Deployments), but survives scaling.
 */
export function postgresStatefulSet(input: RenderInput, names: ObjectNames): V1StatefulSet {
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
      template: storePod(input, names, 'postgres', POSTGRES_IMAGE_USER, {
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
      }),
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: storageQuantity(spec.db_storage_gi) } },
          },
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
export function redisDeployment(input: RenderInput, names: ObjectNames): V1Deployment {
  const memoryMb = input.resourceSpec.redis_memory_mb;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(input, names.redis, 'redis', false),
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selectorLabels(input, 'redis') },
      template: storePod(input, names, 'redis', REDIS_IMAGE_USER, {
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
      }),
    },
  };
}
