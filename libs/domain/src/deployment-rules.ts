import { createHash } from 'node:crypto';

/** Deployment names (docs/api.md, Deployments): DNS-label-like, so every name derived from them stays valid. */
export const DEPLOYMENT_NAME = /^[a-z][a-z0-9-]*[a-z0-9]$/;
export const DEPLOYMENT_NAME_MIN = 3;
export const DEPLOYMENT_NAME_MAX = 63;

export const DEPLOYMENT_SOURCES = ['repohost', 'external_container', 'upload', 'internal_docker'] as const;
export type DeploymentSource = (typeof DEPLOYMENT_SOURCES)[number];

/** Names real clients send, mapped to the canonical source kinds. */
export const SOURCE_ALIASES: Readonly<Record<string, DeploymentSource>> = {
  github: 'repohost',
  external_docker: 'external_container',
  internal_source: 'upload',
};

/** The hosted control plane's name of each source (`SLIPWAY_SOURCE_NAMES=hosted` answers with these). */
export const HOSTED_SOURCE_NAMES: Readonly<Record<DeploymentSource, string>> = {
  repohost: 'github',
  external_container: 'external_docker',
  upload: 'internal_source',
  internal_docker: 'internal_docker',
};

/** How responses name a source: canonical, or as the hosted control plane does. */
export const sourceName = (source: DeploymentSource, names: 'canonical' | 'hosted'): string =>
  names === 'hosted' ? HOSTED_SOURCE_NAMES[source] : source;

/** Sources whose revisions run an image (no build): pulled from elsewhere, or pushed to the built-in registry. */
export const isImageSource = (source: DeploymentSource): boolean =>
  source === 'external_container' || source === 'internal_docker';

export function canonicalSource(value: string): DeploymentSource | undefined {
  if ((DEPLOYMENT_SOURCES as readonly string[]).includes(value)) return value as DeploymentSource;
  return SOURCE_ALIASES[value];
}

/** Cloud-hosted sources are built and run by Slipway; self-hosted ones by a listener. */
export const isSelfHosted = (source: DeploymentSource): boolean => source === 'external_container';

export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod'] as const;
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];

/** Fields that can never change after create; a PATCH that changes one gets 400 naming it. */
export const IMMUTABLE_SOURCE_CONFIG_FIELDS = ['integration_id', 'repo_url', 'listener_id', 'listener_config'] as const;

/** What responses show instead of a secret value; sending it back on PATCH keeps the stored value. */
export const SECRET_MASK = '********';

export interface SecretEntry {
  name: string;
  value: string;
}

/**
 * Applies the secrets of a PATCH to the stored ones: the incoming list is the new set, and an
 * entry whose value is the mask keeps the stored value of that name (GET → edit → PATCH works).
 * Returns the names masked but not stored, which the caller must refuse.
 */
export function mergeSecrets(
  stored: readonly SecretEntry[],
  incoming: readonly SecretEntry[],
): { secrets: SecretEntry[]; unknownMasked: string[] } {
  const byName = new Map(stored.map((s) => [s.name, s.value]));
  const unknownMasked: string[] = [];
  const secrets = incoming.map(({ name, value }) => {
    if (value !== SECRET_MASK) return { name, value };
    const kept = byName.get(name);
    if (kept === undefined) unknownMasked.push(name);
    return { name, value: kept ?? '' };
  });
  return { secrets, unknownMasked };
}

export interface DeploymentPatchShape {
  secrets?: unknown[] | null;
  source_revision_config?: object | null;
  source_config?: { resource_spec?: unknown; tracing?: unknown } | null;
}

/**
 * docs/api.md, Deployments: a PATCH makes a new revision exactly when `secrets` is given, any
 * `source_revision_config` field is non-null, or `source_config.resource_spec` or
 * `source_config.tracing` is non-null (both change what instances run with).
 */
export function patchCreatesRevision(patch: DeploymentPatchShape): boolean {
  if (patch.secrets != null) return true;
  if (patch.source_revision_config && Object.values(patch.source_revision_config).some((v: unknown) => v != null))
    return true;
  return patch.source_config?.resource_spec != null || patch.source_config?.tracing != null;
}

/**
 * Name of the deployment's own Postgres database: a fixed prefix, the name (shortened) and a
 * hash of the id, so it is unique, readable and within Postgres' 63-byte identifier limit.
 */
export function deploymentDatabaseName(name: string, deploymentId: string): string {
  const hash = createHash('sha256').update(deploymentId).digest('hex').slice(0, 8);
  return `slipway_d_${name.replace(/-/g, '_').slice(0, 40)}_${hash}`;
}

/**
 * A new deployment's recorded database name, as its create inserts it, and whether it needs a
 * `provision.deployment` job. Every deployment is created AWAITING_DATABASE (docs/api.md). A
 * listener's cluster runs the deployment's stores (a StatefulSet of its desired state), so all
 * its provisioning is the name: the create records it, queues no job, and the deployer moves it
 * to READY as its first rollout begins (`readyBegunListenerDeployments`). Every other deployment
 * waits for the deployer to provision its stores on this machine.
 */
export function initialDeploymentState(
  name: string,
  deploymentId: string,
  listenerId: string | null,
): { databaseName: string | null; provision: boolean } {
  return listenerId
    ? { databaseName: deploymentDatabaseName(name, deploymentId), provision: false }
    : { databaseName: null, provision: true };
}

/**
 * Whether a rollout must provision its deployment's stores before it rolls out: the deployment
 * still awaits its database, and is not a listener's whose create recorded the name (that one
 * becomes READY as its first rollout begins; see initialDeploymentState). Provisioning is
 * idempotent, so a rollout that provisions never waits on a lost `provision.deployment` job.
 */
export function rolloutProvisionsFirst(deployment: {
  status: string;
  listenerId: string | null;
  databaseRecorded: boolean;
}): boolean {
  return deployment.status === 'AWAITING_DATABASE' && !(deployment.listenerId !== null && deployment.databaseRecorded);
}

/**
 * The forge label that approves a fork's pull request for a preview when a previews setting names
 * none (`source_config.previews.approval_label`; null turns label approval off). Adding a label
 * takes write access on the forge, which a fork's author lacks.
 */
export const DEFAULT_APPROVAL_LABEL = 'preview-approved';
