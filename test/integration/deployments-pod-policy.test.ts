import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRepohostDeployment } from '../support/fixtures.js';
import { restrictedViolations } from '../support/pod-security-restricted.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The Kubernetes pod policy at the API (docs/operations.md, Kubernetes pod policy): a
 * resource_spec that would escalate in the cluster is refused with a 422 naming the field, at
 * create and PATCH, for deployments that render to Kubernetes (on a listener); a workspace admin
 * widens it per listener; the desired state the agent receives follows the listener's policy.
 */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'policy-cluster',
    compute_config: { k8s_namespaces: ['agents'] },
  });
  expect(res.status, res.text).toBe(201);
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

const createBody = (name: string, resourceSpec: Record<string, unknown>, listener = listenerId) => ({
  name,
  source: 'external_container',
  source_config: { listener_id: listener, listener_config: { k8s_namespace: 'agents' }, resource_spec: resourceSpec },
  source_revision_config: { image_uri: 'registry.example/agent:1.0.0' },
});

const sidecar = (securityContext: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name: 'side',
  image: 'registry.example/side:1',
  securityContext,
  ...extra,
});

/** Each escalation the policy refuses, with the loc its 422 names (inside source_config.resource_spec). */
const ESCALATIONS: Array<[string, Record<string, unknown>, Array<string | number>]> = [
  [
    'a privileged sidecar',
    { sidecars: [sidecar({ privileged: true })] },
    ['sidecars', 0, 'securityContext', 'privileged'],
  ],
  [
    'an added capability',
    { sidecars: [sidecar({ capabilities: { add: ['NET_ADMIN'] } })] },
    ['sidecars', 0, 'securityContext', 'capabilities'],
  ],
  [
    'privilege escalation',
    { init_containers: [sidecar({ allowPrivilegeEscalation: true })] },
    ['init_containers', 0, 'securityContext', 'allowPrivilegeEscalation'],
  ],
  ['a foreign service account', { service_account_name: 'default' }, ['service_account_name']],
  ['a hostPath volume', { volumes: [{ name: 'root', hostPath: { path: '/' } }] }, ['volumes', 0, 'hostPath']],
  ['an nfs volume', { volumes: [{ name: 'n', nfs: { server: 'nfs.example', path: '/' } }] }, ['volumes', 0, 'nfs']],
  ['a csi volume', { volumes: [{ name: 'c', csi: { driver: 'x' } }] }, ['volumes', 0, 'csi']],
  ['a projected volume', { volumes: [{ name: 'p', projected: { sources: [] } }] }, ['volumes', 0, 'projected']],
  [
    "the agent's own Secret as a volume",
    { volumes: [{ name: 's', secret: { secretName: 'slipway-agent' } }] },
    ['volumes', 0, 'secret', 'secretName'],
  ],
  [
    "envFrom the agent's Secret",
    { sidecars: [{ name: 's', image: 'i', envFrom: [{ secretRef: { name: 'slipway-agent' } }] }] },
    ['sidecars', 0, 'envFrom', 0, 'secretRef', 'name'],
  ],
  [
    'valueFrom another Secret',
    {
      sidecars: [
        { name: 's', image: 'i', env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'other-env', key: 'K' } } }] },
      ],
    },
    ['sidecars', 0, 'env', 0, 'valueFrom', 'secretKeyRef', 'name'],
  ],
];

const loc = (path: Array<string | number>) => ['body', 'source_config', 'resource_spec', ...path];

describe('create', () => {
  it.each(ESCALATIONS)('refuses %s with a 422 naming the field, and writes nothing', async (name, spec, path) => {
    const deploymentName = `pp-create-${name.replace(/[^a-z]+/g, '-')}`.replace(/-+$/, '');
    const res = await api.http.post('/v2/deployments', createBody(deploymentName, spec));
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: loc(path), msg: expect.stringMatching(/^Value error, /), type: 'pod_policy' },
    ]);
    expect(await api.dataSource.query('SELECT 1 FROM deployments WHERE name = $1', [deploymentName])).toEqual([]);
  });

  it('lists every refused field at once, and accepts the safe subset', async () => {
    const res = await api.http.post(
      '/v2/deployments',
      createBody('pp-many', {
        service_account_name: 'x',
        volumes: [{ name: 'root', hostPath: { path: '/' } }],
        sidecars: [sidecar({ privileged: true })],
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => d.loc)).toEqual([
      loc(['service_account_name']),
      loc(['volumes', 0, 'hostPath']),
      loc(['sidecars', 0, 'securityContext', 'privileged']),
    ]);

    const safe = await api.http.post(
      '/v2/deployments',
      createBody('pp-safe', {
        volumes: [
          { name: 'tmp', emptyDir: {} },
          { name: 'cfg', configMap: { name: 'pp-safe-config' } },
        ],
        volume_mounts: [{ name: 'tmp', mountPath: '/tmp' }],
        sidecars: [
          sidecar(
            {
              runAsNonRoot: true,
              runAsUser: 1000,
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
            { envFrom: [{ secretRef: { name: 'pp-safe-env' } }] },
          ),
        ],
      }),
    );
    expect(safe.status, safe.text).toBe(201);
  });

  it('does not apply to a deployment that does not render to Kubernetes (cloud-hosted, no listener)', async () => {
    const d = await createRepohostDeployment(api, 'pp-cloud');
    const res = await api.http.patch(`/v2/deployments/${d.id}`, {
      source_config: { resource_spec: { service_account_name: 'whatever' } },
    });
    expect(res.status, res.text).toBe(200);
  });
});

describe('PATCH', () => {
  it.each(ESCALATIONS)('refuses %s with a 422 naming the field, and makes no revision', async (name, spec, path) => {
    const created = await api.http.post(
      '/v2/deployments',
      createBody(`pp-patch-${name.replace(/[^a-z]+/g, '-')}`.replace(/-+$/, ''), { cpu: 0.5 }),
    );
    expect(created.status, created.text).toBe(201);
    const res = await api.http.patch(`/v2/deployments/${created.body.id}`, { source_config: { resource_spec: spec } });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: loc(path), msg: expect.stringMatching(/^Value error, /), type: 'pod_policy' },
    ]);
    const [row] = await api.dataSource.query('SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1', [
      created.body.id,
    ]);
    expect(row.n).toBe(1);
    expect((await api.http.get(`/v2/deployments/${created.body.id}`)).body.source_config.resource_spec.cpu).toBe(0.5);
  });
});

describe("a listener's pod_policy, set by a workspace admin", () => {
  it(
    'widens exactly what it names; the agent gets manifests that follow it and stay restricted; ' +
      'narrowing it again blocks a redeploy',
    async () => {
      const listener = await api.http.post('/v2/listeners', {
        compute_type: 'k8s',
        compute_id: 'policy-relaxed',
        compute_config: {
          k8s_namespaces: ['agents'],
          pod_policy: {
            volume_types: ['persistentVolumeClaim'],
            namespace_config_refs: true,
            service_account: true,
            ingress_annotations: true,
          },
        },
      });
      expect(listener.status, listener.text).toBe(201);
      const relaxed = {
        service_account_name: 'workload-identity',
        annotations: { 'example.com/team': 'agents' },
        volumes: [
          { name: 'data', persistentVolumeClaim: { claimName: 'shared-data' } },
          { name: 'creds', secret: { secretName: 'shared-credentials' } },
        ],
        volume_mounts: [{ name: 'data', mountPath: '/data' }],
      };
      const created = await api.http.post('/v2/deployments', {
        ...createBody('pp-relaxed', relaxed, listener.body.id),
        source_config: {
          ...createBody('pp-relaxed', relaxed, listener.body.id).source_config,
          custom_url: 'https://pp.example.com',
        },
      });
      expect(created.status, created.text).toBe(201);
      // Still never beyond the restricted profile.
      const hostile = await api.http.patch(`/v2/deployments/${created.body.id}`, {
        source_config: {
          resource_spec: {
            ...relaxed,
            sidecars: [sidecar({ privileged: true })],
            volumes: [{ name: 'root', hostPath: { path: '/' } }],
          },
        },
      });
      expect(
        hostile.body.detail?.map((d: any) => d.loc),
        hostile.text,
      ).toEqual([loc(['volumes', 0, 'hostPath']), loc(['sidecars', 0, 'securityContext', 'privileged'])]);

      // The desired state renders what the listener allows, and every pod stays restricted.
      const revisionId = created.body.latest_revision_id;
      await api.relay.drain();
      expect(await api.dataSource.transaction((m) => api.flow.transition(m, revisionId, 'DEPLOYING'))).not.toBeNull();
      const agentKey = await api.mintKey({ listenerId: listener.body.id });
      const state = await api.http.get(`/v2/listeners/${listener.body.id}/desired-state`, { key: agentKey });
      expect(state.status, state.text).toBe(200);
      const manifests: any[] = state.body.deployments.find((d: any) => d.deployment_id === created.body.id).manifests;
      const server = manifests.find((o) => o.kind === 'Deployment' && o.metadata.name === 'pp-relaxed');
      expect(server.spec.template.spec.serviceAccountName).toBe('workload-identity');
      expect(server.spec.template.spec.volumes).toEqual(relaxed.volumes);
      expect(manifests.find((o) => o.kind === 'Ingress').metadata.annotations).toEqual(relaxed.annotations);
      expect(manifests.flatMap((o) => restrictedViolations(o))).toEqual([]);

      // Narrowed: the same spec is refused for a new revision and for a redeploy of the old one.
      const narrowed = await api.http.patch(`/v2/listeners/${listener.body.id}`, {
        compute_config: { k8s_namespaces: ['agents'] },
      });
      expect(narrowed.status).toBe(200);
      const again = await api.http.patch(`/v2/deployments/${created.body.id}`, {
        source_config: { resource_spec: relaxed },
      });
      expect(
        again.body.detail?.map((d: any) => d.loc.slice(3).join('.')),
        again.text,
      ).toEqual(['service_account_name', 'volumes.0.persistentVolumeClaim', 'volumes.1.secret.secretName']);
      const redeploy = await api.http.post(`/v2/deployments/${created.body.id}/revisions/${revisionId}/redeploy`);
      expect(redeploy.status, redeploy.text).toBe(400);
      expect(redeploy.body.detail).toMatch(/pod policy: service_account_name: .*volumes\.0\.persistentVolumeClaim/);
      // And the desired state no longer honours the relaxations for what it still renders.
      const narrowedState = await api.http.get(`/v2/listeners/${listener.body.id}/desired-state`, { key: agentKey });
      const renamed = narrowedState.body.deployments
        .find((d: any) => d.deployment_id === created.body.id)
        .manifests.find((o: any) => o.kind === 'Deployment' && o.metadata.name === 'pp-relaxed');
      expect([
        renamed.spec.template.spec.serviceAccountName,
        renamed.spec.template.spec.automountServiceAccountToken,
      ]).toEqual(['pp-relaxed-sa', false]);
    },
  );
});
