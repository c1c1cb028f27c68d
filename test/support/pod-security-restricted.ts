/**
 * A checker of the Kubernetes Pod Security Standards, `restricted` profile (which includes
 * `baseline`), written from https://kubernetes.io/docs/concepts/security/pod-security-standards/
 * as the admission controller applies it (policy version 1.30). No maintained npm package does
 * this offline, so tests run every rendered pod-bearing object through this one; its own tests
 * (pod-security-restricted.test.ts) show it refuses each rule's violation.
 *
 * Returns one line per violation, naming the rule and the field; empty when the object would be
 * admitted into a namespace labelled `pod-security.kubernetes.io/enforce: restricted`.
 */

type Json = Record<string, any>;

const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
const SECCOMP_OK = new Set(['RuntimeDefault', 'Localhost']);

/** The pod template (or pod spec) an object carries, with its metadata, or null for objects without pods. */
function podOf(object: Json): { meta: Json; spec: Json } | null {
  switch (object.kind) {
    case 'Pod':
      return { meta: object.metadata ?? {}, spec: object.spec ?? {} };
    case 'CronJob':
      return {
        meta: object.spec?.jobTemplate?.spec?.template?.metadata ?? {},
        spec: object.spec?.jobTemplate?.spec?.template?.spec ?? {},
      };
    case 'Deployment':
    case 'StatefulSet':
    case 'DaemonSet':
    case 'ReplicaSet':
    case 'ReplicationController':
    case 'Job':
      return { meta: object.spec?.template?.metadata ?? {}, spec: object.spec?.template?.spec ?? {} };
    default:
      return null;
  }
}

export function restrictedViolations(object: Json): string[] {
  const pod = podOf(object);
  if (!pod) return [];
  const { meta, spec } = pod;
  const name = `${object.kind}/${object.metadata?.name}`;
  const out: string[] = [];
  const refuse = (rule: string, where: string) => out.push(`${name}: ${rule}: ${where}`);
  const podSc: Json = spec.securityContext ?? {};
  const containers: Array<[string, Json]> = [
    ...(spec.initContainers ?? []).map((c: Json, i: number) => [`initContainers[${i}] ${c.name}`, c] as [string, Json]),
    ...(spec.containers ?? []).map((c: Json, i: number) => [`containers[${i}] ${c.name}`, c] as [string, Json]),
    ...(spec.ephemeralContainers ?? []).map(
      (c: Json, i: number) => [`ephemeralContainers[${i}] ${c.name}`, c] as [string, Json],
    ),
  ];

  // ---- baseline
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const)
    if (spec[field] === true) refuse('host namespaces', `spec.${field}`);
  if (podSc.windowsOptions?.hostProcess === true)
    refuse('HostProcess', 'spec.securityContext.windowsOptions.hostProcess');
  for (const v of spec.volumes ?? []) {
    if (v.hostPath) refuse('HostPath volumes', `volume ${v.name}`);
    const source = Object.keys(v).find((k) => k !== 'name');
    if (!source || !RESTRICTED_VOLUMES.has(source))
      refuse('volume types', `volume ${v.name} (${source ?? 'no source'})`);
  }
  for (const [key, value] of Object.entries(meta.annotations ?? {})) {
    if (
      key.startsWith('container.apparmor.security.beta.kubernetes.io/') &&
      value !== 'runtime/default' &&
      !String(value).startsWith('localhost/')
    ) {
      refuse('AppArmor', `annotation ${key}`);
    }
  }
  for (const s of podSc.sysctls ?? []) if (!SAFE_SYSCTLS.has(s.name)) refuse('sysctls', `sysctl ${s.name}`);
  checkSeLinux(podSc.seLinuxOptions, 'spec.securityContext', refuse);
  checkAppArmor(podSc.appArmorProfile, 'spec.securityContext', refuse);
  if (podSc.seccompProfile?.type !== undefined && !SECCOMP_OK.has(podSc.seccompProfile.type))
    refuse('seccomp', 'spec.securityContext.seccompProfile');
  if (podSc.runAsUser === 0) refuse('running as non-root user', 'spec.securityContext.runAsUser');

  for (const [where, c] of containers) {
    const sc: Json = c.securityContext ?? {};
    if (sc.privileged === true) refuse('privileged containers', where);
    if (sc.windowsOptions?.hostProcess === true) refuse('HostProcess', where);
    for (const port of c.ports ?? []) if (port.hostPort) refuse('host ports', `${where} port ${port.containerPort}`);
    if (sc.procMount !== undefined && sc.procMount !== 'Default') refuse('/proc mount type', where);
    checkSeLinux(sc.seLinuxOptions, where, refuse);
    checkAppArmor(sc.appArmorProfile, where, refuse);

    // ---- restricted
    if (sc.allowPrivilegeEscalation !== false)
      refuse('privilege escalation (allowPrivilegeEscalation must be false)', where);
    if (sc.runAsNonRoot === false || (sc.runAsNonRoot !== true && podSc.runAsNonRoot !== true))
      refuse('running as non-root (runAsNonRoot must be true)', where);
    if (sc.runAsUser === 0) refuse('running as non-root user', where);
    const seccomp = sc.seccompProfile?.type ?? podSc.seccompProfile?.type;
    if (!SECCOMP_OK.has(seccomp)) refuse('seccomp (RuntimeDefault or Localhost)', where);
    const drop: string[] = sc.capabilities?.drop ?? [];
    if (!drop.includes('ALL')) refuse('capabilities (drop ALL)', where);
    for (const cap of sc.capabilities?.add ?? [])
      if (cap !== 'NET_BIND_SERVICE') refuse('capabilities (add only NET_BIND_SERVICE)', `${where} adds ${cap}`);
  }
  return out;
}

function checkSeLinux(options: Json | undefined, where: string, refuse: (rule: string, where: string) => void): void {
  if (!options) return;
  if (options.type !== undefined && !SELINUX_TYPES.has(options.type)) refuse('SELinux type', where);
  if (options.user || options.role) refuse('SELinux user/role', where);
}

function checkAppArmor(profile: Json | undefined, where: string, refuse: (rule: string, where: string) => void): void {
  if (profile && profile.type !== 'RuntimeDefault' && profile.type !== 'Localhost') refuse('AppArmor', where);
}
