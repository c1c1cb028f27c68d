import { describe, expect, it } from 'vitest';
import { restrictedViolations } from './pod-security-restricted.js';

/** The checker the render tests rely on refuses each rule's violation, so those tests can fail. */

const compliant = () => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'app' },
  spec: {
    template: {
      metadata: {},
      spec: {
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        volumes: [
          { name: 'tmp', emptyDir: {} },
          { name: 'cfg', configMap: { name: 'app-config' } },
        ],
        initContainers: [
          {
            name: 'init',
            image: 'i',
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        ],
        containers: [
          {
            name: 'main',
            image: 'm',
            ports: [{ containerPort: 8000 }],
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] },
            },
          },
        ],
      },
    },
  },
});

type Mutate = (pod: any, main: any) => void;

describe('restrictedViolations', () => {
  it('admits a compliant pod template, and ignores objects without pods', () => {
    expect(restrictedViolations(compliant())).toEqual([]);
    expect(restrictedViolations({ kind: 'Service', metadata: { name: 's' }, spec: { hostNetwork: true } })).toEqual([]);
  });

  it.each<[string, Mutate, RegExp]>([
    ['host network', (pod) => (pod.hostNetwork = true), /host namespaces: spec.hostNetwork/],
    ['host PID', (pod) => (pod.hostPID = true), /host namespaces: spec.hostPID/],
    ['host IPC', (pod) => (pod.hostIPC = true), /host namespaces: spec.hostIPC/],
    ['a privileged container', (_p, main) => (main.securityContext.privileged = true), /privileged containers/],
    [
      'a hostPath volume',
      (pod) => pod.volumes.push({ name: 'root', hostPath: { path: '/' } }),
      /HostPath volumes: volume root/,
    ],
    [
      'an nfs volume',
      (pod) => pod.volumes.push({ name: 'n', nfs: { server: 's', path: '/' } }),
      /volume types: volume n \(nfs\)/,
    ],
    ['a host port', (_p, main) => (main.ports[0].hostPort = 80), /host ports/],
    [
      'an unconfined AppArmor annotation',
      (pod) => (pod.__annotations = { 'container.apparmor.security.beta.kubernetes.io/main': 'unconfined' }),
      /AppArmor/,
    ],
    ['an unsafe sysctl', (pod) => (pod.securityContext.sysctls = [{ name: 'kernel.msgmax', value: '1' }]), /sysctls/],
    ['an SELinux user', (_p, main) => (main.securityContext.seLinuxOptions = { user: 'root' }), /SELinux user/],
    ['an unmasked /proc', (_p, main) => (main.securityContext.procMount = 'Unmasked'), /\/proc mount/],
    [
      'privilege escalation allowed',
      (_p, main) => (main.securityContext.allowPrivilegeEscalation = true),
      /privilege escalation/,
    ],
    [
      'privilege escalation left unset',
      (_p, main) => delete main.securityContext.allowPrivilegeEscalation,
      /privilege escalation/,
    ],
    ['runAsNonRoot missing', (pod) => delete pod.securityContext.runAsNonRoot, /running as non-root \(runAsNonRoot/],
    ['a container running as root', (_p, main) => (main.securityContext.runAsUser = 0), /running as non-root user/],
    ['seccomp missing', (pod) => delete pod.securityContext.seccompProfile, /seccomp/],
    [
      'seccomp unconfined on a container',
      (_p, main) => (main.securityContext.seccompProfile = { type: 'Unconfined' }),
      /seccomp/,
    ],
    [
      'capabilities not dropped',
      (_p, main) => (main.securityContext.capabilities.drop = []),
      /capabilities \(drop ALL\)/,
    ],
    ['a capability added', (_p, main) => main.securityContext.capabilities.add.push('SYS_ADMIN'), /adds SYS_ADMIN/],
  ])('refuses %s', (_name, mutate, expected) => {
    const object = compliant() as any;
    const pod = object.spec.template.spec;
    mutate(pod, pod.containers[0]);
    if (pod.__annotations) {
      object.spec.template.metadata.annotations = pod.__annotations;
      delete pod.__annotations;
    }
    const problems = restrictedViolations(object);
    expect(problems.join('\n')).toMatch(expected);
  });
});
