import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { resolveResourceSpec, type ResourceSpec, type ResourceSpecInput } from '@slipway/domain';
import type { StoreCredentials } from './credentials.js';
import { isDns1035Label, k8sName } from './k8s-name.js';
import { cpuQuantity, memoryQuantity } from './quantities.js';
import { restrictedViolations } from '../../../../test/support/pod-security-restricted.js';
import { renderManifests as render, withoutSecretData, type RenderedObject, type RenderInput } from './render.js';

/**
 * Every object any test here renders goes through the Pod Security Standards `restricted`
 * checker (test/support/pod-security-restricted.ts): whatever the spec, no rendered pod may
 * need more than that profile allows.
 */
function renderManifests(renderInput: RenderInput): RenderedObject[] {
  const objects = render(renderInput);
  expect(objects.flatMap((o) => restrictedViolations(o))).toEqual([]);
  return objects;
}

const DEPLOYMENT_ID = '0b6f5c1e-3d52-4a8e-9c36-2b1f0e7d9a41';
const REVISION_ID = '7c2d9e44-61f0-4b7a-8d1e-55a3c9b0f213';
const SECRET_VALUE = 'sk-render-test-secret-value';
const credentials: StoreCredentials = {
  databasePassword: 'db-password-of-the-deployment',
  redisPassword: 'redis-password-of-the-deployment',
};

function input(spec: ResourceSpecInput = {}, extra: Partial<RenderInput> = {}): RenderInput {
  return {
    deploymentId: DEPLOYMENT_ID,
    deploymentName: 'agent-one',
    revisionId: REVISION_ID,
    namespace: 'agents',
    imageUri: 'registry.example/agent:1.0.0',
    resourceSpec: resolveResourceSpec(spec, null),
    secrets: [{ name: 'OPENAI_API_KEY', value: SECRET_VALUE }],
    databaseName: 'slipway_d_agent_one_1234abcd',
    credentials,
    ...extra,
  };
}

const of = <T extends RenderedObject>(objects: RenderedObject[], kind: string, name: string): T => {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  expect(found, `${kind} ${name}`).toBeDefined();
  return found as T;
};
const deployment = (objects: RenderedObject[], name: string) => of<k8s.V1Deployment>(objects, 'Deployment', name);
const hpa = (objects: RenderedObject[], name: string) =>
  of<k8s.V2HorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler', name);
const mainContainer = (d: k8s.V1Deployment) => d.spec!.template.spec!.containers[0]!;

// ------------------------------------------------------------------ schema check

/** Model class of each kind in @kubernetes/client-node (generated from the Kubernetes OpenAPI). */
const MODEL_OF_KIND: Record<string, string> = {
  ServiceAccount: 'V1ServiceAccount',
  Secret: 'V1Secret',
  Service: 'V1Service',
  Deployment: 'V1Deployment',
  StatefulSet: 'V1StatefulSet',
  HorizontalPodAutoscaler: 'V2HorizontalPodAutoscaler',
  Ingress: 'V1Ingress',
};

/**
 * Walks a rendered object along the Kubernetes model and lists every field the model does not
 * have and every value of the wrong JSON type: what the API server's schema would reject or
 * (worse, with client-side apply) silently drop.
 */
function schemaProblems(value: unknown, type: string, path: string, out: string[] = []): string[] {
  if (value === undefined || value === null) return out;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) out.push(`${path}: expected an array`);
    else value.forEach((v, i) => schemaProblems(v, array[1]!, `${path}[${i}]`, out));
    return out;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value !== 'object' || Array.isArray(value)) out.push(`${path}: expected a map`);
    else for (const [k, v] of Object.entries(value)) schemaProblems(v, map[1]!, `${path}.${k}`, out);
    return out;
  }
  const primitive: Record<string, (v: unknown) => boolean> = {
    string: (v) => typeof v === 'string',
    number: (v) => typeof v === 'number' && Number.isInteger(v),
    boolean: (v) => typeof v === 'boolean',
    IntOrString: (v) => typeof v === 'string' || typeof v === 'number',
    Date: (v) => typeof v === 'string',
    any: () => true,
  };
  if (primitive[type]) {
    if (!primitive[type](value)) out.push(`${path}: expected ${type}, got ${JSON.stringify(value)}`);
    return out;
  }
  const model = (
    k8s as unknown as Record<string, { getAttributeTypeMap?: () => Array<{ baseName: string; type: string }> }>
  )[type];
  if (!model?.getAttributeTypeMap) return [...out, `${path}: unknown model ${type}`];
  if (typeof value !== 'object' || Array.isArray(value)) return [...out, `${path}: expected an object (${type})`];
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [key, child] of Object.entries(value)) {
    const childType = fields.get(key);
    if (!childType) out.push(`${path}.${key}: not a field of ${type}`);
    else schemaProblems(child, childType, `${path}.${key}`, out);
  }
  return out;
}

// ------------------------------------------------------------------ tests

describe('renderManifests', () => {
  it('renders the whole stack, in apply order, each object complete and in the namespace', () => {
    const objects = renderManifests(input());
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'ServiceAccount/agent-one-sa',
      'Secret/agent-one-credentials',
      'Secret/agent-one-env',
      'Service/agent-one-db',
      'StatefulSet/agent-one-db',
      'Service/agent-one-redis',
      'Deployment/agent-one-redis',
      'Service/agent-one',
      'Deployment/agent-one',
      'HorizontalPodAutoscaler/agent-one',
      'Deployment/agent-one-queue',
      'HorizontalPodAutoscaler/agent-one-queue',
    ]);
    for (const o of objects) {
      expect(o.apiVersion, o.kind).toMatch(/^(v1|apps\/v1|autoscaling\/v2|networking\.k8s\.io\/v1)$/);
      expect(isDns1035Label(o.metadata!.name!), o.metadata!.name).toBe(true);
      expect(o.metadata!.namespace).toBe('agents');
    }
  });

  it('renders objects that fit the Kubernetes models field by field (and the check catches a typo)', () => {
    const spec: ResourceSpecInput = {
      volumes: [{ name: 'config', configMap: { name: 'agent-config' } }],
      volume_mounts: [{ name: 'config', mountPath: '/etc/agent', readOnly: true }],
      init_containers: [
        {
          name: 'migrate',
          image: 'registry.example/migrate:1',
          command: ['migrate'],
          env: [{ name: 'A', value: 'b' }],
        },
      ],
      sidecars: [{ name: 'proxy', image: 'registry.example/proxy:1', restartPolicy: 'Always' }],
    };
    for (const o of renderManifests(input(spec, { customUrl: 'https://agent.example.com/' }))) {
      expect(schemaProblems(o, MODEL_OF_KIND[o.kind!]!, o.kind!), `${o.kind} ${o.metadata?.name}`).toEqual([]);
    }
    const broken = structuredClone(
      renderManifests(input()).find((o) => o.kind === 'Deployment' && o.metadata?.name === 'agent-one'),
    ) as any;
    broken.spec.template.spec.containers[0].volumeMount = [];
    broken.spec.replicas = '2';
    expect(schemaProblems(broken, 'V1Deployment', 'Deployment')).toEqual([
      'Deployment.spec.replicas: expected number, got "2"',
      'Deployment.spec.template.spec.containers[0].volumeMount: not a field of V1Container',
    ]);
  });

  it('scales the API server and the queue workers within their own bounds', () => {
    const objects = renderManifests(input({ min_scale: 2, max_scale: 7, queue_min_scale: 1, queue_max_scale: 4 }));
    expect(deployment(objects, 'agent-one').spec!.replicas).toBe(2);
    expect(hpa(objects, 'agent-one').spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'agent-one' },
      minReplicas: 2,
      maxReplicas: 7,
      metrics: [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } },
      ],
    });
    expect(deployment(objects, 'agent-one-queue').spec!.replicas).toBe(1);
    expect(hpa(objects, 'agent-one-queue').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'agent-one-queue' },
      minReplicas: 1,
      maxReplicas: 4,
    });
  });

  it('renders no autoscaler for a component scaled to zero (an HPA cannot go below 1)', () => {
    const objects = renderManifests(input({ min_scale: 1, max_scale: 3, queue_min_scale: 0, queue_max_scale: 2 }));
    expect(deployment(objects, 'agent-one-queue').spec!.replicas).toBe(0);
    expect(objects.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata!.name === 'agent-one-queue')).toBe(
      false,
    );
    expect(hpa(objects, 'agent-one').spec!.minReplicas).toBe(1);
  });

  it('turns fractional cores into millicores and MB into Mi', () => {
    expect([0.5, 1, 1.25, 0.1, 2, 0.0001].map(cpuQuantity)).toEqual(['500m', '1', '1250m', '100m', '2', '1m']);
    expect(memoryQuantity(512)).toBe('512Mi');

    const objects = renderManifests(
      input({
        cpu: 0.25,
        cpu_limit: 1.5,
        memory_mb: 768,
        memory_limit_mb: 1536,
        queue_cpu: 0.75,
        queue_cpu_limit: 2,
        queue_memory_mb: 256,
      }),
    );
    expect(mainContainer(deployment(objects, 'agent-one')).resources).toEqual({
      requests: { cpu: '250m', memory: '768Mi' },
      limits: { cpu: '1500m', memory: '1536Mi' },
    });
    expect(mainContainer(deployment(objects, 'agent-one-queue')).resources).toEqual({
      requests: { cpu: '750m', memory: '256Mi' },
      limits: { cpu: '2', memory: '512Mi' },
    });
  });

  it('sizes Postgres and Redis from the db_* and redis_* fields', () => {
    const objects = renderManifests(
      input({
        db_cpu: 0.5,
        db_cpu_limit: 1,
        db_memory_mb: 2048,
        db_memory_limit_mb: 4096,
        db_storage_gi: 25,
        db_max_connections: 300,
        redis_memory_mb: 400,
      }),
    );
    const db = of<k8s.V1StatefulSet>(objects, 'StatefulSet', 'agent-one-db');
    const postgres = db.spec!.template.spec!.containers[0]!;
    expect(db.spec!.serviceName).toBe('agent-one-db');
    expect(postgres.resources).toEqual({
      requests: { cpu: '500m', memory: '2048Mi' },
      limits: { cpu: '1', memory: '4096Mi' },
    });
    expect(postgres.args).toEqual(['-c', 'max_connections=300']);
    expect(db.spec!.volumeClaimTemplates).toEqual([
      {
        metadata: { name: 'data' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '25Gi' } } },
      },
    ]);
    expect(postgres.volumeMounts).toEqual([{ name: 'data', mountPath: '/var/lib/postgresql/data' }]);
    expect(of<k8s.V1Service>(objects, 'Service', 'agent-one-db').spec).toMatchObject({
      clusterIP: 'None',
      ports: [{ port: 5432 }],
    });

    const redis = deployment(objects, 'agent-one-redis').spec!.template.spec!.containers[0]!;
    expect(redis.resources).toEqual({ requests: { memory: '400Mi' }, limits: { memory: '400Mi' } });
    expect(redis.args).toEqual(expect.arrayContaining(['--maxmemory', '320mb']));
  });

  it('configures the API server: port 8000, health on /ok, env from its Secret, a Service in front', () => {
    const objects = renderManifests(input());
    const api = deployment(objects, 'agent-one');
    const server = mainContainer(api);
    expect(server).toMatchObject({
      image: 'registry.example/agent:1.0.0',
      ports: [{ name: 'http', containerPort: 8000 }],
      readinessProbe: { httpGet: { path: '/ok', port: 'http' } },
      livenessProbe: { httpGet: { path: '/ok', port: 'http' } },
      envFrom: [{ secretRef: { name: 'agent-one-env' } }],
    });
    expect(server.env).toEqual(expect.arrayContaining([{ name: 'PORT', value: '8000' }]));
    // The old version keeps serving until the new one is ready.
    expect(api.spec!.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(of<k8s.V1Service>(objects, 'Service', 'agent-one').spec).toMatchObject({
      selector: api.spec!.selector!.matchLabels,
      ports: [{ port: 80, targetPort: 'http' }],
    });

    const queue = mainContainer(deployment(objects, 'agent-one-queue'));
    expect(queue.image).toBe('registry.example/agent:1.0.0');
    expect(queue.env).toEqual(expect.arrayContaining([{ name: 'SLIPWAY_ROLE', value: 'queue' }]));
    expect(queue.envFrom).toEqual([{ secretRef: { name: 'agent-one-env' } }]);
  });

  it(
    'puts user labels, annotations, volumes, init containers, sidecars, ' +
      'pull secrets and (allowed by the listener) the service account where Kubernetes reads them',
    () => {
      const spec: ResourceSpecInput = {
        labels: { team: 'search', 'app.kubernetes.io/managed-by': 'someone-else' },
        annotations: { 'prometheus.io/scrape': 'true' },
        service_account_name: 'agent-sa',
        image_pull_secrets: [{ name: 'regcred' }],
        volumes: [
          { name: 'config', configMap: { name: 'agent-config' } },
          { name: 'scratch', emptyDir: {} },
        ],
        volume_mounts: [{ name: 'config', mountPath: '/etc/agent', readOnly: true }],
        init_containers: [{ name: 'migrate', image: 'registry.example/migrate:1', command: ['migrate', 'up'] }],
        sidecars: [
          { name: 'log-shipper', image: 'registry.example/shipper:2' },
          { name: 'db-proxy', image: 'registry.example/proxy:3', restartPolicy: 'Always' },
        ],
      };
      const objects = renderManifests(input(spec, { podPolicy: { service_account: true } }));
      for (const name of ['agent-one', 'agent-one-queue']) {
        const d = deployment(objects, name);
        const pod = d.spec!.template;
        for (const meta of [d.metadata!, pod.metadata!]) {
          expect(meta.labels, name).toMatchObject({ team: 'search', 'app.kubernetes.io/managed-by': 'slipway' });
          expect(meta.annotations, name).toEqual({ 'prometheus.io/scrape': 'true' });
        }
        expect(pod.metadata!.labels).toMatchObject({
          'app.kubernetes.io/name': 'agent-one',
          'app.kubernetes.io/instance': DEPLOYMENT_ID,
          'slipway.dev/revision-id': REVISION_ID,
        });
        // Selectors are immutable: nothing that changes per revision (or per user) may be in them.
        expect(Object.keys(d.spec!.selector!.matchLabels!).sort()).toEqual([
          'app.kubernetes.io/component',
          'app.kubernetes.io/instance',
        ]);
        expect(pod.metadata!.labels).toMatchObject(d.spec!.selector!.matchLabels!);

        const podSpec = pod.spec!;
        expect(podSpec.serviceAccountName).toBe('agent-sa');
        expect(podSpec.automountServiceAccountToken).toBeUndefined();
        expect(podSpec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
        expect(podSpec.volumes).toEqual(spec.volumes);
        expect(podSpec.containers[0]!.volumeMounts).toEqual(spec.volume_mounts);
        expect(podSpec.containers.map((c) => c.name)).toEqual([
          name === 'agent-one' ? 'api-server' : 'queue-worker',
          'log-shipper',
        ]);
        // A native sidecar (restartPolicy Always) is only valid among init containers, ahead of the user's.
        expect(podSpec.initContainers!.map((c) => c.name)).toEqual(['db-proxy', 'migrate']);
        expect(podSpec.initContainers![1]).toEqual({
          ...spec.init_containers![0],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        });
      }
      // The stores are not the user's workload: no user volumes or sidecars, and no restart per revision.
      const db = of<k8s.V1StatefulSet>(objects, 'StatefulSet', 'agent-one-db');
      expect(db.metadata!.labels).toMatchObject({ team: 'search' });
      expect(db.spec!.template.spec!.volumes).toBeUndefined();
      expect(db.spec!.template.spec!.containers.map((c) => c.name)).toEqual(['postgres']);
      expect(db.spec!.template.metadata!.labels).not.toHaveProperty('slipway.dev/revision-id');
      expect(deployment(objects, 'agent-one-redis').spec!.template.metadata!.labels).not.toHaveProperty(
        'slipway.dev/revision-id',
      );
    },
  );

  it("runs every pod as the deployment's own tokenless service account, whatever the spec names, unless the listener allows", () => {
    const objects = renderManifests(input({ service_account_name: 'cluster-admin-sa' }));
    expect(of<k8s.V1ServiceAccount>(objects, 'ServiceAccount', 'agent-one-sa')).toMatchObject({
      automountServiceAccountToken: false,
      metadata: {
        namespace: 'agents',
        labels: { 'app.kubernetes.io/instance': DEPLOYMENT_ID, 'app.kubernetes.io/managed-by': 'slipway' },
      },
    });
    for (const o of objects) {
      const pod = (o as k8s.V1Deployment).spec?.template?.spec;
      if (!pod) continue;
      expect([pod.serviceAccountName, pod.automountServiceAccountToken], o.metadata!.name).toEqual([
        'agent-one-sa',
        false,
      ]);
    }
    expect(JSON.stringify(objects)).not.toContain('cluster-admin-sa');
    // A deployment named `default` must not take over (nor later delete) the namespace's default ServiceAccount.
    expect(
      render(input({}, { deploymentName: 'default' }))
        .filter((o) => o.kind === 'ServiceAccount')
        .map((o) => o.metadata!.name),
    ).toEqual(['default-sa']);
  });

  it('renders a hostile spec into restricted pods: no privilege, host port, added capability or host volume survives', () => {
    const hostile = {
      name: 'evil',
      image: 'registry.example/evil:1',
      ports: [{ containerPort: 9100, hostPort: 80, hostIP: '0.0.0.0' }],
      securityContext: {
        privileged: true,
        allowPrivilegeEscalation: true,
        runAsUser: 0,
        runAsNonRoot: false,
        capabilities: { add: ['SYS_ADMIN'] },
        seccompProfile: { type: 'Unconfined' },
        procMount: 'Unmasked',
      },
      hostNetwork: true,
    };
    const objects = renderManifests(
      input({
        volumes: [
          { name: 'root', hostPath: { path: '/' } },
          { name: 'share', nfs: { server: 'nfs.example', path: '/' } },
          { name: 'tmp', emptyDir: {} },
        ],
        sidecars: [hostile, { ...hostile, name: 'native', restartPolicy: 'Always' }],
        init_containers: [
          {
            ...hostile,
            name: 'init',
            securityContext: { readOnlyRootFilesystem: true, runAsUser: 1001, runAsGroup: 1001 },
          },
        ],
      }),
    );
    const pod = deployment(objects, 'agent-one').spec!.template.spec!;
    expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: {} }]);
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    const evil = pod.containers.find((c) => c.name === 'evil')!;
    expect(evil.ports).toEqual([{ containerPort: 9100 }]);
    expect(evil.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(evil).not.toHaveProperty('hostNetwork');
    expect(pod.initContainers!.map((c) => [c.name, c.securityContext])).toEqual([
      ['native', { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } }],
      [
        'init',
        {
          readOnlyRootFilesystem: true,
          runAsUser: 1001,
          runAsGroup: 1001,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        },
      ],
    ]);
    for (const field of ['hostNetwork', 'hostPID', 'hostIPC']) expect(pod).not.toHaveProperty(field);
  });

  it('puts user annotations on the Ingress only when the listener allows it', () => {
    const spec = { annotations: { 'nginx.ingress.kubernetes.io/configuration-snippet': 'return 200;' } };
    const guarded = of<k8s.V1Ingress>(
      renderManifests(input(spec, { customUrl: 'https://agent.example.com' })),
      'Ingress',
      'agent-one',
    );
    expect(guarded.metadata!.annotations).toBeUndefined();
    const allowed = of<k8s.V1Ingress>(
      renderManifests(
        input(spec, { customUrl: 'https://agent.example.com', podPolicy: { ingress_annotations: true } }),
      ),
      'Ingress',
      'agent-one',
    );
    expect(allowed.metadata!.annotations).toEqual(spec.annotations);
  });

  it("runs Postgres and Redis as their images' own non-root users, with a writable data volume", () => {
    const objects = renderManifests(input());
    const db = of<k8s.V1StatefulSet>(objects, 'StatefulSet', 'agent-one-db').spec!.template.spec!;
    expect(db.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 70,
      runAsGroup: 70,
      fsGroup: 70,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const redis = deployment(objects, 'agent-one-redis').spec!.template.spec!;
    expect(redis.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 999, runAsGroup: 1000 });
    for (const pod of [db, redis])
      expect([pod.serviceAccountName, pod.automountServiceAccountToken]).toEqual(['agent-one-sa', false]);
  });

  it('renders an Ingress only for a custom URL, with TLS for https', () => {
    expect(renderManifests(input()).some((o) => o.kind === 'Ingress')).toBe(false);
    const objects = renderManifests(input({}, { customUrl: 'https://agent.example.com/v1' }));
    const ingress = of<k8s.V1Ingress>(objects, 'Ingress', 'agent-one');
    expect(ingress.spec).toEqual({
      tls: [{ hosts: ['agent.example.com'], secretName: 'agent-one-tls' }],
      rules: [
        {
          host: 'agent.example.com',
          http: {
            paths: [
              { path: '/v1', pathType: 'Prefix', backend: { service: { name: 'agent-one', port: { name: 'http' } } } },
            ],
          },
        },
      ],
    });
    const plain = of<k8s.V1Ingress>(
      renderManifests(input({}, { customUrl: 'http://agent.internal' })),
      'Ingress',
      'agent-one',
    );
    expect(plain.spec!.tls).toBeUndefined();
    expect(plain.spec!.rules![0]!.http!.paths[0]!.path).toBe('/');
  });

  it('keeps every name within 63 characters (52 for the StatefulSet) and distinct for long deployment names', () => {
    const long = `a${'b'.repeat(61)}c`;
    const sibling = `a${'b'.repeat(61)}d`;
    expect(long).toHaveLength(63);
    const first = renderManifests(input({}, { deploymentName: long }));
    const second = renderManifests(input({}, { deploymentName: sibling }));
    for (const objects of [first, second]) {
      const keys = objects.map((o) => `${o.kind}/${o.metadata!.name}`);
      expect(new Set(keys).size).toBe(keys.length);
      for (const o of objects) {
        expect(isDns1035Label(o.metadata!.name!), o.metadata!.name).toBe(true);
        if (o.kind === 'StatefulSet') expect(o.metadata!.name!.length).toBeLessThanOrEqual(52);
      }
      expect(objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata!.name!.split('-').at(-1))).toEqual(
        expect.arrayContaining(['queue', 'redis']),
      );
    }
    const names = (objects: RenderedObject[]) => new Set(objects.map((o) => o.metadata!.name));
    for (const name of names(first)) {
      if (name !== long) expect(names(second).has(name), name).toBe(false);
    }
    // Service DNS names in the env point at the renamed Services.
    const env = of<k8s.V1Secret>(first, 'Secret', k8sName(long, 'env')).stringData!;
    expect(env.DATABASE_URI).toContain(`@${k8sName(long, 'db', 52)}:5432/`);
    expect(env.REDIS_URI).toContain(`@${k8sName(long, 'redis')}:6379/0`);
  });

  it('puts secret values and store passwords into Secrets and nowhere else', () => {
    const objects = renderManifests(input({ labels: { team: 'a' } }, { customUrl: 'https://agent.example.com' }));
    const env = of<k8s.V1Secret>(objects, 'Secret', 'agent-one-env');
    expect(env.stringData).toEqual({
      DATABASE_URI: `postgres://slipway:${credentials.databasePassword}@agent-one-db:5432/slipway_d_agent_one_1234abcd`,
      OPENAI_API_KEY: SECRET_VALUE,
      REDIS_URI: `redis://:${credentials.redisPassword}@agent-one-redis:6379/0`,
    });
    expect(of<k8s.V1Secret>(objects, 'Secret', 'agent-one-credentials').stringData).toMatchObject({
      POSTGRES_PASSWORD: credentials.databasePassword,
      REDIS_PASSWORD: credentials.redisPassword,
      POSTGRES_DB: 'slipway_d_agent_one_1234abcd',
    });
    const others = JSON.stringify(objects.filter((o) => o.kind !== 'Secret'));
    for (const value of [SECRET_VALUE, credentials.databasePassword, credentials.redisPassword]) {
      expect(others).not.toContain(value);
      expect(JSON.stringify(withoutSecretData(objects))).not.toContain(value);
    }
    // Stripped Secrets keep their identity, so an agent can still delete them.
    expect(
      withoutSecretData(objects)
        .filter((o) => o.kind === 'Secret')
        .map((o) => o.metadata!.name),
    ).toEqual(['agent-one-credentials', 'agent-one-env']);
  });

  it('is deterministic: the same snapshot renders identical JSON whatever the key order of its maps', () => {
    const spec: ResourceSpec = resolveResourceSpec(
      { labels: { b: '2', a: '1' }, annotations: { y: '1', x: '2' } },
      null,
    );
    const reordered: ResourceSpec = {
      ...Object.fromEntries(Object.entries(spec).reverse()),
      labels: { a: '1', b: '2' },
      annotations: { x: '2', y: '1' },
    } as unknown as ResourceSpec;
    const secrets = [
      { name: 'B_KEY', value: 'b' },
      { name: 'A_KEY', value: 'a' },
    ];
    const one = JSON.stringify(renderManifests({ ...input(), resourceSpec: spec, secrets }));
    const two = JSON.stringify(
      renderManifests({ ...input(), resourceSpec: reordered, secrets: [...secrets].reverse() }),
    );
    expect(one).toBe(two);
    expect(JSON.stringify(renderManifests({ ...input(), resourceSpec: spec, secrets }))).toBe(one);
  });
});

describe('k8sName', () => {
  it('keeps a valid short name as <base>-<suffix>', () => {
    expect(k8sName('agent-one')).toBe('agent-one');
    expect(k8sName('agent-one', 'queue')).toBe('agent-one-queue');
  });

  it('truncates with a hash of the full name, keeping the suffix, within the limit', () => {
    const base = 'x'.repeat(63);
    const name = k8sName(base, 'queue');
    expect(name).toHaveLength(63);
    expect(name).toMatch(/^x+-[0-9a-f]{8}-queue$/);
    expect(isDns1035Label(name)).toBe(true);
    expect(k8sName(base, 'db', 52).length).toBeLessThanOrEqual(52);
    expect(k8sName(`${base}a`, 'queue')).not.toBe(k8sName(`${base}b`, 'queue'));
    expect(k8sName(base, 'queue')).toBe(name);
  });

  it('cleans what is not a DNS-1035 label', () => {
    for (const base of ['Agent_One', '1agent', '-agent-', 'a--b']) {
      expect(isDns1035Label(k8sName(base, 'db')), base).toBe(true);
    }
    expect(k8sName('Agent_One', 'db')).toMatch(/^agent-one-[0-9a-f]{8}-db$/);
  });
});
