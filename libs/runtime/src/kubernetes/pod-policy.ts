import type { ResourceSpec } from '@slipway/domain';
import { k8sName } from './k8s-name.js';

/**
 * What a `resource_spec` may put into the pods of a deployment that runs on Kubernetes, and what
 * a workspace admin may relax per listener (`compute_config.pod_policy`). A deployment's code is
 * hostile: by default its pods get nothing the namespace holds beyond its own objects, and
 * nothing that loosens the Pod Security Standards `restricted` profile. No relaxation touches
 * that profile: privileged containers, host namespaces, host paths and ports, added
 * capabilities and privilege escalation stay refused whatever the listener says.
 */
export interface PodPolicy {
  /** Volume sources allowed beyond `emptyDir` and the deployment's own Secrets/ConfigMaps. */
  volume_types?: RelaxableVolumeType[];
  /** Volumes, `envFrom` and `valueFrom` may name any Secret or ConfigMap of the namespace. */
  namespace_config_refs?: boolean;
  /** `service_account_name` is used as given, its token mounted, instead of the deployment's own tokenless one. */
  service_account?: boolean;
  /** The deployment's `annotations` also go on its Ingress (where a controller may read them as configuration). */
  ingress_annotations?: boolean;
}

/** Volume sources the `restricted` profile allows that a listener may open up. */
export const RELAXABLE_VOLUME_TYPES = [
  'persistentVolumeClaim',
  'projected',
  'downwardAPI',
  'csi',
  'ephemeral',
] as const;
export type RelaxableVolumeType = (typeof RELAXABLE_VOLUME_TYPES)[number];

/** Every volume source the renderer passes on: the `restricted` profile's list. */
export const RESTRICTED_VOLUME_TYPES: readonly string[] = [
  'emptyDir',
  'secret',
  'configMap',
  ...RELAXABLE_VOLUME_TYPES,
];

/** One refused field of a resource_spec: its path inside the spec and why. */
export interface PodPolicyViolation {
  path: Array<string | number>;
  message: string;
}

/**
 * The deployment's own Secrets and ConfigMaps: its env Secret (rendered by Slipway) and
 * `<name>-config`, a Secret or ConfigMap an operator may create for it. Both names end in a
 * suffix no other deployment's rendered objects carry, so one deployment cannot name another's.
 */
export function ownConfigNames(deploymentName: string): string[] {
  return [k8sName(deploymentName, 'env'), k8sName(deploymentName, 'config')];
}

/** securityContext fields a container may set, each with the only values allowed. */
const SECURITY_CONTEXT_RULES: Record<string, { ok: (v: any) => boolean; expected: string }> = {
  runAsNonRoot: { ok: (v) => v === true, expected: 'true' },
  allowPrivilegeEscalation: { ok: (v) => v === false, expected: 'false' },
  privileged: { ok: (v) => v === false, expected: 'false' },
  readOnlyRootFilesystem: { ok: (v) => typeof v === 'boolean', expected: 'a boolean' },
  runAsUser: { ok: (v) => Number.isInteger(v) && v >= 1, expected: 'a non-root uid (1 or more)' },
  runAsGroup: { ok: (v) => Number.isInteger(v) && v >= 1, expected: 'a gid of 1 or more' },
  seccompProfile: {
    ok: (v) => v?.type === 'RuntimeDefault' && Object.keys(v).length === 1,
    expected: '{"type": "RuntimeDefault"}',
  },
  capabilities: {
    ok: (v) =>
      typeof v === 'object' &&
      v !== null &&
      Object.keys(v).every((k) => k === 'drop' || k === 'add') &&
      (v.add ?? []).length === 0 &&
      (v.drop === undefined || (Array.isArray(v.drop) && v.drop.includes('ALL'))),
    expected: '{"drop": ["ALL"]} and nothing added',
  },
};

/** Pod annotations that loosen a container's confinement (AppArmor, the legacy seccomp ones). */
const CONFINEMENT_ANNOTATION = new RegExp(
  String.raw`^(container\.apparmor\.security\.beta\.kubernetes\.io|seccomp\.security\.alpha\.kubernetes\.io` +
    String.raw`|container\.seccomp\.security\.alpha\.kubernetes\.io)\/`,
);

/** Every field of `spec` the policy refuses, with its path inside the spec. Empty when it may run. */
export function podPolicyViolations(
  spec: ResourceSpec,
  deploymentName: string,
  policy: PodPolicy = {},
): PodPolicyViolation[] {
  const out: PodPolicyViolation[] = [];
  const refused = (path: Array<string | number>, message: string) => out.push({ path, message });
  const own = new Set(ownConfigNames(deploymentName));
  const checkRef = (path: Array<string | number>, kind: 'Secret' | 'ConfigMap', name: unknown) => {
    if (policy.namespace_config_refs || (typeof name === 'string' && own.has(name))) return;
    refused(
      path,
      `${kind} '${String(name)}' is not this deployment's own (${[...own].join(' or ')}); the listener's ` +
        `pod_policy.namespace_config_refs allows others`,
    );
  };

  if (spec.service_account_name != null && !policy.service_account) {
    refused(
      ['service_account_name'],
      "Each deployment runs as its own service account, without a token; naming another needs the listener's pod_policy.service_account",
    );
  }
  for (const key of Object.keys(spec.annotations)) {
    if (CONFINEMENT_ANNOTATION.test(key))
      refused(['annotations', key], 'AppArmor and seccomp annotations cannot loosen the pod confinement');
  }
  spec.volumes.forEach((volume, i) => checkVolume(volume, ['volumes', i], policy, refused, checkRef));
  spec.volume_mounts.forEach((mount, i) => {
    if (mount.mountPropagation === 'Bidirectional')
      refused(['volume_mounts', i, 'mountPropagation'], 'Bidirectional mount propagation needs a privileged container');
  });
  for (const list of ['init_containers', 'sidecars'] as const) {
    spec[list].forEach((container, i) => checkContainer(container, [list, i], refused, checkRef));
  }
  return out;
}

type Refuse = (path: Array<string | number>, message: string) => void;
type CheckRef = (path: Array<string | number>, kind: 'Secret' | 'ConfigMap', name: unknown) => void;

function checkVolume(
  volume: Record<string, any>,
  path: Array<string | number>,
  policy: PodPolicy,
  refused: Refuse,
  checkRef: CheckRef,
): void {
  const sources = Object.keys(volume).filter((k) => k !== 'name');
  if (sources.length !== 1) {
    refused(
      path,
      `A volume needs exactly one source (emptyDir, secret, ` +
        `configMap${policy.volume_types?.length ? `, ${policy.volume_types.join(', ')}` : ''})`,
    );
    return;
  }
  const [source] = sources as [string];
  const at = [...path, source];
  const value = volume[source] ?? {};
  if (source === 'emptyDir') return;
  if (source === 'secret') return checkRef([...at, 'secretName'], 'Secret', value.secretName);
  if (source === 'configMap') return checkRef([...at, 'name'], 'ConfigMap', value.name);
  if (!(policy.volume_types ?? []).includes(source as RelaxableVolumeType)) {
    const relaxable = (RELAXABLE_VOLUME_TYPES as readonly string[]).includes(source);
    refused(
      at,
      relaxable
        ? `${source} volumes need the listener's pod_policy.volume_types`
        : `${source} volumes are not allowed (Pod Security Standards, restricted)`,
    );
    return;
  }
  if (source === 'projected') {
    (value.sources ?? []).forEach((s: Record<string, any>, j: number) => {
      if (s.secret) checkRef([...at, 'sources', j, 'secret', 'name'], 'Secret', s.secret.name);
      if (s.configMap) checkRef([...at, 'sources', j, 'configMap', 'name'], 'ConfigMap', s.configMap.name);
    });
  }
}

function checkContainer(
  container: Record<string, any>,
  path: Array<string | number>,
  refused: Refuse,
  checkRef: CheckRef,
): void {
  for (const [key, value] of Object.entries(container.securityContext ?? {})) {
    const rule = SECURITY_CONTEXT_RULES[key];
    if (!rule)
      refused(
        [...path, 'securityContext', key],
        `securityContext.${key} cannot be set (allowed: ${Object.keys(SECURITY_CONTEXT_RULES).join(', ')})`,
      );
    else if (!rule.ok(value))
      refused([...path, 'securityContext', key], `securityContext.${key} must be ${rule.expected}`);
  }
  (container.envFrom ?? []).forEach((from: Record<string, any>, j: number) => {
    if (from.secretRef) checkRef([...path, 'envFrom', j, 'secretRef', 'name'], 'Secret', from.secretRef.name);
    if (from.configMapRef)
      checkRef([...path, 'envFrom', j, 'configMapRef', 'name'], 'ConfigMap', from.configMapRef.name);
  });
  (container.env ?? []).forEach((env: Record<string, any>, j: number) => {
    const ref = env.valueFrom ?? {};
    if (ref.secretKeyRef)
      checkRef([...path, 'env', j, 'valueFrom', 'secretKeyRef', 'name'], 'Secret', ref.secretKeyRef.name);
    if (ref.configMapKeyRef)
      checkRef([...path, 'env', j, 'valueFrom', 'configMapKeyRef', 'name'], 'ConfigMap', ref.configMapKeyRef.name);
  });
}
