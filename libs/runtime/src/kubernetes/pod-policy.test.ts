import { describe, expect, it } from 'vitest';
import { resolveResourceSpec, type ResourceSpecInput } from '@slipway/domain';
import { ownConfigNames, podPolicyViolations, type PodPolicy } from './pod-policy.js';

const NAME = 'support-agent';
const violations = (spec: ResourceSpecInput, policy?: PodPolicy) =>
  podPolicyViolations(resolveResourceSpec(spec, null), NAME, policy);
const paths = (spec: ResourceSpecInput, policy?: PodPolicy) => violations(spec, policy).map((v) => v.path.join('.'));

describe('podPolicyViolations', () => {
  it('accepts the safe subset: emptyDir, its own Secret and ConfigMap, a restricted securityContext, plain env', () => {
    expect(ownConfigNames(NAME)).toEqual(['support-agent-env', 'support-agent-config']);
    const spec: ResourceSpecInput = {
      labels: { team: 'a' },
      annotations: { 'prometheus.io/scrape': 'true' },
      image_pull_secrets: [{ name: 'regcred' }],
      volumes: [
        { name: 'tmp', emptyDir: { medium: 'Memory' } },
        { name: 'env', secret: { secretName: 'support-agent-env' } },
        { name: 'cfg', configMap: { name: 'support-agent-config' } },
      ],
      volume_mounts: [{ name: 'tmp', mountPath: '/tmp', mountPropagation: 'None' }],
      sidecars: [
        {
          name: 'proxy',
          image: 'p:1',
          env: [
            { name: 'A', value: 'b' },
            { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'K', valueFrom: { secretKeyRef: { name: 'support-agent-env', key: 'K' } } },
          ],
          envFrom: [{ configMapRef: { name: 'support-agent-config' } }, { secretRef: { name: 'support-agent-env' } }],
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            allowPrivilegeEscalation: false,
            privileged: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ],
    };
    expect(violations(spec)).toEqual([]);
  });

  it.each<[string, ResourceSpecInput, string]>([
    [
      'a privileged sidecar',
      { sidecars: [{ name: 's', image: 'i', securityContext: { privileged: true } }] },
      'sidecars.0.securityContext.privileged',
    ],
    [
      'privilege escalation',
      { init_containers: [{ name: 's', image: 'i', securityContext: { allowPrivilegeEscalation: true } }] },
      'init_containers.0.securityContext.allowPrivilegeEscalation',
    ],
    [
      'an added capability',
      {
        sidecars: [{ name: 's', image: 'i', securityContext: { capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } } }],
      },
      'sidecars.0.securityContext.capabilities',
    ],
    [
      'capabilities not all dropped',
      { sidecars: [{ name: 's', image: 'i', securityContext: { capabilities: { drop: ['NET_RAW'] } } }] },
      'sidecars.0.securityContext.capabilities',
    ],
    [
      'root',
      { sidecars: [{ name: 's', image: 'i', securityContext: { runAsUser: 0 } }] },
      'sidecars.0.securityContext.runAsUser',
    ],
    [
      'runAsNonRoot false',
      { sidecars: [{ name: 's', image: 'i', securityContext: { runAsNonRoot: false } }] },
      'sidecars.0.securityContext.runAsNonRoot',
    ],
    [
      'seccomp unconfined',
      { sidecars: [{ name: 's', image: 'i', securityContext: { seccompProfile: { type: 'Unconfined' } } }] },
      'sidecars.0.securityContext.seccompProfile',
    ],
    [
      'an unlisted securityContext field',
      { sidecars: [{ name: 's', image: 'i', securityContext: { procMount: 'Unmasked' } }] },
      'sidecars.0.securityContext.procMount',
    ],
    ['a foreign service account', { service_account_name: 'default' }, 'service_account_name'],
    ['a hostPath volume', { volumes: [{ name: 'root', hostPath: { path: '/' } }] }, 'volumes.0.hostPath'],
    ['an nfs volume', { volumes: [{ name: 'n', nfs: { server: 'x', path: '/' } }] }, 'volumes.0.nfs'],
    ['a csi volume', { volumes: [{ name: 'c', csi: { driver: 'x' } }] }, 'volumes.0.csi'],
    ['a projected volume', { volumes: [{ name: 'p', projected: { sources: [] } }] }, 'volumes.0.projected'],
    [
      'a volume claim',
      { volumes: [{ name: 'p', persistentVolumeClaim: { claimName: 'data' } }] },
      'volumes.0.persistentVolumeClaim',
    ],
    ['a volume without a source', { volumes: [{ name: 'x' }] }, 'volumes.0'],
    [
      "another Secret as a volume (the agent's key)",
      { volumes: [{ name: 's', secret: { secretName: 'slipway-agent' } }] },
      'volumes.0.secret.secretName',
    ],
    [
      'another ConfigMap as a volume',
      { volumes: [{ name: 'c', configMap: { name: 'kube-root-ca.crt' } }] },
      'volumes.0.configMap.name',
    ],
    [
      'envFrom another Secret',
      { sidecars: [{ name: 's', image: 'i', envFrom: [{ secretRef: { name: 'slipway-agent' } }] }] },
      'sidecars.0.envFrom.0.secretRef.name',
    ],
    [
      'envFrom another ConfigMap',
      { sidecars: [{ name: 's', image: 'i', envFrom: [{ configMapRef: { name: 'other' } }] }] },
      'sidecars.0.envFrom.0.configMapRef.name',
    ],
    [
      'valueFrom another Secret',
      {
        init_containers: [
          {
            name: 's',
            image: 'i',
            env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'other-agent-env', key: 'K' } } }],
          },
        ],
      },
      'init_containers.0.env.0.valueFrom.secretKeyRef.name',
    ],
    [
      'valueFrom another ConfigMap',
      {
        sidecars: [
          { name: 's', image: 'i', env: [{ name: 'K', valueFrom: { configMapKeyRef: { name: 'x', key: 'K' } } }] },
        ],
      },
      'sidecars.0.env.0.valueFrom.configMapKeyRef.name',
    ],
    [
      'Bidirectional mount propagation',
      { volume_mounts: [{ name: 'v', mountPath: '/v', mountPropagation: 'Bidirectional' }] },
      'volume_mounts.0.mountPropagation',
    ],
    [
      'an unconfined AppArmor annotation',
      { annotations: { 'container.apparmor.security.beta.kubernetes.io/api-server': 'unconfined' } },
      'annotations.container.apparmor.security.beta.kubernetes.io/api-server',
    ],
  ])('refuses %s, naming the field', (_name, spec, path) => {
    const found = violations(spec);
    expect(found.map((v) => v.path.join('.'))).toEqual([path]);
    expect(found[0]!.message.length).toBeGreaterThan(10);
  });

  it("does not take another deployment's objects for its own", () => {
    // `support` owns support-env and support-config; support-agent's objects are not among them.
    expect(
      podPolicyViolations(
        resolveResourceSpec({ volumes: [{ name: 's', secret: { secretName: 'support-agent-env' } }] }, null),
        'support',
      ),
    ).toHaveLength(1);
    expect(
      podPolicyViolations(
        resolveResourceSpec({ volumes: [{ name: 's', secret: { secretName: 'support-env' } }] }, null),
        'support',
      ),
    ).toEqual([]);
  });

  it('reports every problem at once', () => {
    expect(
      paths({
        service_account_name: 'x',
        volumes: [{ name: 'root', hostPath: { path: '/' } }],
        sidecars: [
          { name: 's', image: 'i', securityContext: { privileged: true, capabilities: { add: ['SYS_ADMIN'] } } },
        ],
      }),
    ).toEqual([
      'service_account_name',
      'volumes.0.hostPath',
      'sidecars.0.securityContext.privileged',
      'sidecars.0.securityContext.capabilities',
    ]);
  });

  it("widens exactly what the listener's pod_policy allows, and never the restricted profile", () => {
    const policy: PodPolicy = {
      volume_types: ['persistentVolumeClaim', 'projected', 'csi'],
      namespace_config_refs: true,
      service_account: true,
    };
    expect(
      violations(
        {
          service_account_name: 'workload-identity',
          volumes: [
            { name: 'data', persistentVolumeClaim: { claimName: 'shared' } },
            { name: 'p', projected: { sources: [{ secret: { name: 'tls' } }, { configMap: { name: 'ca' } }] } },
            { name: 'c', csi: { driver: 'secrets-store.csi.k8s.io' } },
            { name: 's', secret: { secretName: 'shared-credentials' } },
          ],
          sidecars: [{ name: 's', image: 'i', envFrom: [{ secretRef: { name: 'shared-credentials' } }] }],
        },
        policy,
      ),
    ).toEqual([]);
    // Projected sources are references too: without namespace_config_refs they must be the deployment's own.
    expect(
      paths(
        { volumes: [{ name: 'p', projected: { sources: [{ secret: { name: 'tls' } }] } }] },
        { volume_types: ['projected'] },
      ),
    ).toEqual(['volumes.0.projected.sources.0.secret.name']);
    // No relaxation reaches host volumes, privilege or capabilities.
    const everything: PodPolicy = {
      volume_types: ['persistentVolumeClaim', 'projected', 'downwardAPI', 'csi', 'ephemeral'],
      namespace_config_refs: true,
      service_account: true,
      ingress_annotations: true,
    };
    expect(
      paths(
        {
          volumes: [
            { name: 'root', hostPath: { path: '/' } },
            { name: 'n', nfs: { server: 'x', path: '/' } },
          ],
          sidecars: [
            {
              name: 's',
              image: 'i',
              securityContext: {
                privileged: true,
                allowPrivilegeEscalation: true,
                capabilities: { add: ['SYS_ADMIN'] },
              },
            },
          ],
        },
        everything,
      ),
    ).toEqual([
      'volumes.0.hostPath',
      'volumes.1.nfs',
      'sidecars.0.securityContext.privileged',
      'sidecars.0.securityContext.allowPrivilegeEscalation',
      'sidecars.0.securityContext.capabilities',
    ]);
  });
});
