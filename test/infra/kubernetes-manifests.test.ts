import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@slipway/config';
import { resolveResourceSpec, type DeploymentType, type ResourceSpecInput } from '@slipway/domain';
import { registryConfiguration } from '@slipway/registry';
import { renderManifests, type RenderInput } from '@slipway/runtime';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { MANAGED_KINDS } from '../../services/listener-agent/src/cluster.js';
import { schemaViolations } from '../support/kubernetes-schema.js';
import { restrictedViolations } from '../support/pod-security-restricted.js';

/**
 * Everything Slipway hands to Kubernetes validates against the Kubernetes schemas: the
 * install manifests in infra/k8s, rendered offline with `kubectl kustomize` (Debian package
 * `kubernetes-client`) exactly as `kubectl apply -k` would, and what libs/runtime's render.ts
 * produces for a deployment, across deployment types and a resource_spec using every field.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'sk-schema-secret-3c9e1a77';
const DB_PASSWORD = 'pg-password-5b1f0d9e7a';
const REDIS_PASSWORD = 'redis-password-82c4e6f1b0';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: any;
  rules?: any[];
  roleRef?: any;
  subjects?: any[];
};

function kustomize(dir: string): Obj[] {
  const out = execFileSync('kubectl', ['kustomize', path.join(ROOT, dir)], { encoding: 'utf8' });
  return parseAllDocuments(out).map((d) => d.toJSON() as Obj);
}

async function expectValid(objects: object[]): Promise<void> {
  const problems = (await Promise.all(objects.map((o) => schemaViolations(o)))).flat();
  expect(problems).toEqual([]);
}

const podSpecs = (objects: Obj[]) =>
  objects.flatMap((o) => (o.spec?.template?.spec ? [[o, o.spec.template.spec] as const] : []));

describe('infra/k8s/control-plane', () => {
  const objects = kustomize('infra/k8s/control-plane');
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!;

  it('renders with kubectl kustomize and validates against the Kubernetes schemas', async () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/slipway-config',
        'Deployment/slipway-api',
        'Deployment/slipway-builder',
        'Deployment/slipway-deployer',
        'Deployment/slipway-edge',
        'Deployment/slipway-registry',
        'HorizontalPodAutoscaler/slipway-api',
        'Job/slipway-migrate',
        'Namespace/slipway',
        'PersistentVolumeClaim/slipway-data',
        'PersistentVolumeClaim/slipway-registry',
        'PodDisruptionBudget/slipway-api',
        'PodDisruptionBudget/slipway-builder',
        'PodDisruptionBudget/slipway-deployer',
        'PodDisruptionBudget/slipway-edge',
        'Service/slipway-api',
        'Service/slipway-edge',
        'Service/slipway-registry',
      ].sort(),
    );
    await expectValid(objects);
  });

  it('probes every service on /healthz and /readyz, requests resources, and reads secrets from the Secret only', () => {
    for (const name of ['slipway-api', 'slipway-builder', 'slipway-deployer', 'slipway-edge']) {
      const [container] = named('Deployment', name).spec.template.spec.containers;
      expect(container.livenessProbe.httpGet.path, name).toBe('/healthz');
      expect(container.readinessProbe.httpGet.path, name).toBe('/readyz');
    }
    for (const [o, spec] of podSpecs(objects)) {
      for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
        expect(c.resources?.requests?.cpu, `${o.metadata.name}/${c.name}`).toBeDefined();
        expect(c.resources?.requests?.memory, `${o.metadata.name}/${c.name}`).toBeDefined();
        // No value in clear in a pod spec: only what Kubernetes fills in (the pod's own IP).
        for (const e of c.env ?? [])
          expect(e.valueFrom?.fieldRef, `${o.metadata.name}/${c.name} ${e.name}`).toBeDefined();
        // Slipway's own processes read the settings and the Secret; distribution reads only the file written for it.
        if (c.image === 'registry:2') expect(c.envFrom, `${o.metadata.name}/${c.name}`).toBeUndefined();
        else
          expect(c.envFrom, `${o.metadata.name}/${c.name}`).toEqual([
            { configMapRef: { name: 'slipway-config' } },
            { secretRef: { name: 'slipway-secrets' } },
          ]);
      }
    }
    expect(named('HorizontalPodAutoscaler', 'slipway-api').spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'slipway-api',
    });
    for (const o of objects)
      if (o.kind !== 'Namespace') expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('slipway');
  });
});

describe('infra/k8s/control-plane: the edge', () => {
  const objects = kustomize('infra/k8s/control-plane');
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!;
  const settings = (named('ConfigMap', 'slipway-config') as unknown as { data: Record<string, string> }).data;

  it('serves 80 and 443 through a LoadBalancer, unprivileged, at the address the runtime owner announces', () => {
    const config = loadConfig({
      ...settings,
      DATABASE_URL: 'postgres://u:p@db/slipway',
      REDIS_URL: 'redis://redis:6379',
      SLIPWAY_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect([config.edge.httpPort, config.edge.httpsPort]).toEqual([80, 443]);
    const pod = named('Deployment', 'slipway-edge').spec.template.spec;
    const [edge] = pod.containers;
    // Its health port (probes, /metrics) is the pod's, never the Service's.
    expect(edge.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([80, 443, 8181]);
    expect(config.edge.healthPort).toBe(8181);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }],
    });
    expect(edge.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(named('Service', 'slipway-edge').spec).toMatchObject({
      type: 'LoadBalancer',
      ports: [{ port: 80 }, { port: 443 }],
    });
    // The deployer's proxies bind the pod's interfaces, and it announces the pod's IP to the edges.
    expect(config.runtime.host).toBe('0.0.0.0');
    const [deployer] = named('Deployment', 'slipway-deployer').spec.template.spec.containers;
    expect(deployer.env).toEqual([
      { name: 'SLIPWAY_RUNTIME_ADVERTISE_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ]);
  });
});

describe('infra/k8s/control-plane: the built-in image registry', () => {
  const objects = kustomize('infra/k8s/control-plane');
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!;
  const settings = named('ConfigMap', 'slipway-config') as unknown as { data: Record<string, string> };
  const deployment = named('Deployment', 'slipway-registry');
  const pod = deployment.spec.template.spec;
  const [init] = pod.initContainers;
  const registry = pod.containers.find((c: { name: string }) => c.name === 'registry');
  const guard = pod.containers.find((c: { name: string }) => c.name === 'registry-guard');
  const mountOf = (container: { volumeMounts: { name: string; mountPath: string }[] }, volume: string) =>
    container.volumeMounts.find(
      (m) => pod.volumes.find((v: { name: string }) => v.name === m.name)?.persistentVolumeClaim?.claimName === volume,
    )?.mountPath;
  /** What libs/registry renders from these very settings (the init container's `registry-config`). */
  const rendered = () => {
    const config = loadConfig({
      ...settings.data,
      DATABASE_URL: 'postgres://u:p@db/slipway',
      REDIS_URL: 'redis://redis:6379',
      SLIPWAY_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    return {
      config,
      registry: JSON.parse(registryConfiguration(config, `${config.registry.storageDir}/token-issuer.crt`)),
    };
  };

  it('runs distribution on the configuration its init container writes, its images on a volume of its own', () => {
    const { config, registry: generated } = rendered();
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    expect(init.image).toBe('slipway-cli');
    expect(init.args).toEqual(['node', 'dist/main.js', 'registry-config']);
    expect(registry.image).toBe('registry:2');
    // Both see the registry volume where the generated configuration says its files are.
    expect(registry.args).toEqual(['serve', `${config.registry.storageDir}/config.yml`]);
    expect(mountOf(init, 'slipway-registry')).toBe(config.registry.storageDir);
    expect(mountOf(registry, 'slipway-registry')).toBe(config.registry.storageDir);
    expect(generated.storage.filesystem.rootdirectory.startsWith(`${config.registry.storageDir}/`)).toBe(true);
    expect(generated.auth.token.rootcertbundle.startsWith(`${config.registry.storageDir}/`)).toBe(true);
    // The signing key is on the shared data volume, where the api replicas read it; the registry never sees it.
    expect(config.registry.signingKeyFile.startsWith(`${mountOf(init, 'slipway-data')}/`)).toBe(true);
    expect(mountOf(registry, 'slipway-data')).toBeUndefined();
    expect(named('PersistentVolumeClaim', 'slipway-registry').spec.accessModes).toEqual(['ReadWriteOnce']);
    // The registry runs as the uid that wrote its 0600 files, with nothing more.
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(registry.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
  });

  it("puts the push guard in front of distribution: the Service reaches the guard, distribution only the pod's loopback", () => {
    const { config, registry: generated } = rendered();
    expect(pod.containers.map((c: { name: string }) => c.name).sort()).toEqual(['registry', 'registry-guard']);
    // The guard: the cli image's `registry-guard`, with the settings and the Secret (DATABASE_URL for quota reads).
    expect(guard.image).toBe('slipway-cli');
    expect(guard.args).toEqual(['node', 'dist/main.js', 'registry-guard']);
    expect(guard.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(guard.volumeMounts).toBeUndefined();
    const [port] = guard.ports;
    expect(port.containerPort).toBe(config.registry.port);
    expect(config.registry.host).toBe('0.0.0.0');
    // distribution: no port of the pod, on the loopback address the guard forwards to.
    expect(registry.ports).toBeUndefined();
    expect(config.registry.upstreamUrl).toBe('http://127.0.0.1:5001');
    expect(generated.http.addr).toBe('127.0.0.1:5001');
    for (const probe of [registry.readinessProbe, registry.livenessProbe])
      expect(probe.exec.command.join(' ')).toContain(`http://${generated.http.addr}/v2/`);
    const service = named('Service', 'slipway-registry');
    expect(service.spec.ports.map((p: { targetPort: string }) => p.targetPort)).toEqual([port.name]);
  });

  it('listens where its Service sends traffic, and Slipway is pointed at that Service and back at the api', () => {
    const { config, registry: generated } = rendered();
    const [port] = guard.ports;
    expect(`${config.registry.host}:${port.containerPort}`).toBe(`0.0.0.0:${config.registry.port}`);
    const service = named('Service', 'slipway-registry');
    expect(service.spec.selector).toEqual(deployment.spec.template.metadata.labels);
    expect(service.spec.ports).toEqual([{ name: 'registry', port: 5000, targetPort: port.name }]);
    expect(config.registry.internalUrl).toBe(`http://${service.metadata.name}:${service.spec.ports[0].port}`);
    // Push events reach the api through its Service; token requests go to the public URL.
    const api = named('Service', 'slipway-api');
    expect(generated.notifications.endpoints[0].url).toBe(`http://${api.metadata.name}/v2/registry/events`);
    expect(api.spec.ports[0].port).toBe(80);
    expect(generated.auth.token.realm).toBe(`${settings.data.SLIPWAY_PUBLIC_URL}/v2/registry/token`);
  });
});

describe('infra/k8s/agent', () => {
  const objects = kustomize('infra/k8s/agent');
  const AGENT_NS = 'slipway-agent';
  const TARGET_NS = 'slipway-deployments';
  const roles = objects.filter((o) => o.kind === 'Role');
  const role = roles[0]!;
  const allowed = (group: string, resource: string) =>
    new Set(
      (role.rules ?? [])
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs),
    );

  it('renders with kubectl kustomize and validates against the Kubernetes schemas', async () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/slipway-agent/slipway-agent',
        'Deployment/slipway-agent/slipway-agent',
        'Namespace//slipway-agent',
        'Namespace//slipway-deployments',
        'Role/slipway-deployments/slipway-agent',
        'RoleBinding/slipway-deployments/slipway-agent',
        'ServiceAccount/slipway-agent/slipway-agent',
      ].sort(),
    );
    await expectValid(objects);
  });

  it('runs the agent in its own namespace, apart from where it deploys, with rights only in the target namespace', () => {
    for (const kind of ['Deployment', 'ServiceAccount', 'ConfigMap'])
      expect(objects.find((o) => o.kind === kind)!.metadata.namespace, kind).toBe(AGENT_NS);
    // No right at all in its own namespace (its key's Secret is there), none cluster-wide.
    expect(objects.some((o) => o.kind.startsWith('Cluster'))).toBe(false);
    expect(roles.map((r) => r.metadata.namespace)).toEqual([TARGET_NS]);
    const binding = objects.find((o) => o.kind === 'RoleBinding')!;
    expect(binding.metadata.namespace).toBe(TARGET_NS);
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'slipway-agent', namespace: AGENT_NS }]);
    const deployment = objects.find((o) => o.kind === 'Deployment')!;
    expect(deployment.spec.template.spec.serviceAccountName).toBe('slipway-agent');
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.containers[0].envFrom).toEqual([
      { configMapRef: { name: 'slipway-agent' } },
      { secretRef: { name: 'slipway-agent' } },
    ]);
  });

  it('enforces Pod Security Standards restricted in both namespaces, and the agent pod meets it', () => {
    for (const ns of objects.filter((o) => o.kind === 'Namespace')) {
      expect((ns.metadata as any).labels?.['pod-security.kubernetes.io/enforce'], ns.metadata.name).toBe('restricted');
    }
    expect(objects.flatMap((o) => restrictedViolations(o))).toEqual([]);
  });

  it('grants, in the target namespace, exactly the verbs the agent uses on exactly the kinds it manages', () => {
    const plural = (kind: string) => (kind === 'Ingress' ? 'ingresses' : `${kind.toLowerCase()}s`);
    for (const { apiVersion, kind } of MANAGED_KINDS) {
      const group = apiVersion.includes('/') ? apiVersion.split('/')[0]! : '';
      const verbs = [...allowed(group, plural(kind))].sort();
      expect(verbs, kind).toEqual(
        kind === 'PersistentVolumeClaim' ? ['delete', 'list'] : ['delete', 'get', 'list', 'patch'],
      );
    }
    expect([...allowed('', 'pods')]).toEqual(['list']);
    expect([...allowed('', 'pods/log')]).toEqual(['get']);
    const granted = (role.rules ?? []).flatMap((r: any) => r.resources as string[]).sort();
    expect(granted).toEqual([...MANAGED_KINDS.map((k) => plural(k.kind)), 'pods', 'pods/log'].sort());
  });
});

describe('render.ts output', () => {
  const input = (
    deploymentType: DeploymentType | null,
    spec: ResourceSpecInput,
    customUrl: string | null = null,
  ): RenderInput => ({
    deploymentId: '4f0c2a8e-1b7d-4e95-a3c6-8d2e0f9b7a15',
    deploymentName: 'schema-check-agent',
    revisionId: '9a7e3c1d-5b2f-4c08-b6d4-e1f0a2c3d4b5',
    namespace: 'agents',
    imageUri: 'registry.example/agent:2.1.0',
    resourceSpec: resolveResourceSpec(spec, deploymentType),
    secrets: [
      { name: 'OPENAI_API_KEY', value: SECRET },
      { name: 'EMPTY_ONE', value: '' },
    ],
    databaseName: 'slipway_d_schema_check_agent_4f0c2a8e',
    credentials: { databasePassword: DB_PASSWORD, redisPassword: REDIS_PASSWORD } as RenderInput['credentials'],
    customUrl,
  });
  const full: ResourceSpecInput = {
    min_scale: 0,
    max_scale: 4,
    queue_min_scale: 2,
    queue_max_scale: 6,
    labels: { team: 'agents' },
    annotations: { 'prometheus.io/scrape': 'true' },
    service_account_name: 'agent-runner',
    image_pull_secrets: [{ name: 'registry-credentials' }],
    volumes: [
      { name: 'cache', emptyDir: {} },
      { name: 'config', configMap: { name: 'agent-config' } },
    ],
    volume_mounts: [{ name: 'cache', mountPath: '/cache' }],
    init_containers: [{ name: 'migrate', image: 'registry.example/migrate:1', command: ['migrate'] }],
    sidecars: [
      { name: 'proxy', image: 'registry.example/proxy:1', restartPolicy: 'Always' },
      { name: 'exporter', image: 'registry.example/exporter:1', ports: [{ containerPort: 9100 }] },
    ],
  } as ResourceSpecInput;
  const cases: Array<[string, RenderInput]> = [
    ['dev_free defaults', input('dev_free', {})],
    ['dev defaults', input('dev', {})],
    ['prod defaults with an https custom URL', input('prod', {}, 'https://agent.example.com/v1')],
    ['self-hosted, every resource_spec field', input(null, full, 'http://agent.internal')],
  ];

  it.each(cases)(
    '%s: every object validates against the Kubernetes schemas and meets Pod Security Standards restricted',
    async (_name, renderInput) => {
      const objects = renderManifests(renderInput);
      expect(objects.length).toBeGreaterThanOrEqual(7);
      await expectValid(objects);
      expect(objects.flatMap((o) => restrictedViolations(o))).toEqual([]);
    },
  );

  it.each(cases)(
    '%s: secret values live in Secret objects only, and pods take them by reference',
    (_name, renderInput) => {
      const objects = renderManifests(renderInput) as unknown as Obj[];
      const secrets = objects.filter((o) => o.kind === 'Secret');
      expect(JSON.stringify(secrets)).toContain(SECRET);
      const others = JSON.stringify(objects.filter((o) => o.kind !== 'Secret'));
      for (const value of [SECRET, DB_PASSWORD, REDIS_PASSWORD]) expect(others).not.toContain(value);
      for (const [o, spec] of podSpecs(objects)) {
        for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
          for (const e of c.env ?? []) {
            // Plain values only for settings that are not secret; secrets come through secretKeyRef.
            if (e.value !== undefined)
              expect(['PORT', 'SLIPWAY_ROLE', 'PGDATA'], `${o.metadata.name}/${c.name} ${e.name}`).toContain(e.name);
            else expect(e.valueFrom?.secretKeyRef, `${o.metadata.name}/${c.name} ${e.name}`).toBeDefined();
          }
        }
      }
    },
  );

  it('a schema violation is reported, so the check can fail', async () => {
    const [first] = renderManifests(cases[1]![1]);
    const broken = { ...first!, kind: 'Deployment', apiVersion: 'apps/v1', spec: { replicas: 'two' } };
    expect((await schemaViolations(broken)).join('\n')).toMatch(/replicas|selector|template/);
    expect(await schemaViolations({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual([
      'example.com/v1 Widget w: unknown to the Kubernetes schemas',
    ]);
    // A misspelt field passes the OpenAPI schemas (they allow extra properties) but the API
    // server's strict field validation refuses it, and server-side apply would drop it.
    const misspelt = structuredClone(renderManifests(cases[1]![1]).find((o) => o.kind === 'Deployment')!) as any;
    misspelt.spec.template.spec.containers[0].imagePullPolicyy = 'Always';
    misspelt.spec.strategy = { ...misspelt.spec.strategy, rollingUpdate: { maxSurge: 1, maxUnavailabl: 0 } };
    expect((await schemaViolations(misspelt)).sort()).toEqual(
      [
        `apps/v1 Deployment ${misspelt.metadata.name}: .spec.template.spec.containers[0]: unknown field "imagePullPolicyy"`,
        `apps/v1 Deployment ${misspelt.metadata.name}: .spec.strategy.rollingUpdate: unknown field "maxUnavailabl"`,
      ].sort(),
    );
  });
});
