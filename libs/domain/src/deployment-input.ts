/**
 * Rules of deployment create and PATCH bodies beyond their schemas (docs/api.md, Deployments):
 * what a request must and must not carry for its source, within the operator's ceilings. Each
 * validator returns every problem it finds as the api's 422 lists them, none when valid.
 */
import {
  isImageSource,
  isSelfHosted,
  type DeploymentSource,
  type DeploymentType,
  type SecretEntry,
} from './deployment-rules.js';
import { bodyProblem, valueError, resourceSpecProblem, type InputProblem } from './input-problems.js';
import { pullSecretProblems } from './pull-secrets.js';
import {
  resourceSpecInputProblems,
  type ResourceCeilings,
  type ResourceSpec,
  type ResourceSpecInput,
} from './resource-spec.js';

/** The fields of a create body these rules read (its schema has checked their types). */
export interface DeploymentCreateInput {
  deployment_type?: string | null;
  source_config: {
    deployment_type?: string | null;
    integration_id?: string | null;
    repo_url?: string | null;
    listener_id?: string | null;
    resource_spec?: Record<string, unknown> | null;
    previews?: unknown;
  };
  source_revision_config: { image_uri?: string | null; source_tarball_path?: string | null };
}

const IMAGE_URI = ['source_revision_config', 'image_uri'] as const;

/** The type a create asks for (top-level or in source_config): `dev` by default; none for self-hosted sources. */
export function createDeploymentType(source: DeploymentSource, body: DeploymentCreateInput): DeploymentType | null {
  if (isSelfHosted(source)) return null;
  return ((body.deployment_type ?? body.source_config.deployment_type) as DeploymentType | null | undefined) ?? 'dev';
}

/** Self-hosted deployments have no type. */
function deploymentTypeProblems(source: DeploymentSource, body: DeploymentCreateInput): InputProblem[] {
  if (!isSelfHosted(source) || (body.deployment_type ?? body.source_config.deployment_type) == null) return [];
  const loc = body.deployment_type != null ? ['deployment_type'] : ['source_config', 'deployment_type'];
  return [valueError(loc, 'deployment_type must be null for external_container deployments')];
}

/**
 * Which source fields a create must and must not carry for its source. `upload` and
 * `internal_docker` deployments name their tarball or image only by a PATCH, after uploading
 * or pushing it.
 */
function sourceFieldProblems(source: DeploymentSource, body: DeploymentCreateInput): InputProblem[] {
  const sc = body.source_config;
  const src = body.source_revision_config;
  const problems: InputProblem[] = [];
  const required = (loc: readonly string[], value: unknown, why: string) => {
    if (value == null || value === '') problems.push(bodyProblem(loc, 'missing', `Field required ${why}`));
  };
  const forbidden = (loc: readonly string[], value: unknown, why: string) => {
    if (value != null) problems.push(valueError(loc, `${loc.at(-1)} ${why}`));
  };
  const onlyRepohost = () => {
    forbidden(['source_config', 'integration_id'], sc.integration_id, 'is only for repohost deployments');
    forbidden(['source_config', 'repo_url'], sc.repo_url, 'is only for repohost deployments');
    forbidden(
      ['source_config', 'previews'],
      sc.previews,
      'is only for repohost deployments (a preview builds a pull request)',
    );
  };
  if (source === 'repohost') {
    required(['source_config', 'integration_id'], sc.integration_id, 'for repohost deployments');
    required(['source_config', 'repo_url'], sc.repo_url, 'for repohost deployments');
    forbidden(['source_config', 'listener_id'], sc.listener_id, 'is only for external_container deployments');
    forbidden(IMAGE_URI, src.image_uri, 'is only for external_container deployments');
  } else if (source === 'external_container') {
    // listener_id may be left out: required when the workspace has listeners (checked at write).
    required(IMAGE_URI, src.image_uri, 'for external_container deployments');
    onlyRepohost();
  } else {
    // Neither an integration nor a repository (C4), nor a listener.
    forbidden(['source_config', 'listener_id'], sc.listener_id, 'is only for external_container deployments');
    onlyRepohost();
    const imageWhy =
      source === 'internal_docker'
        ? 'is set by a PATCH after pushing the image (POST /v2/deployments/{id}/push-token)'
        : 'is only for external_container deployments';
    forbidden(IMAGE_URI, src.image_uri, imageWhy);
  }
  // An upload belongs to a deployment, so none can exist yet: a path here could only be guessed (C10).
  forbidden(
    ['source_revision_config', 'source_tarball_path'],
    src.source_tarball_path,
    'is set by a PATCH after uploading through POST /v2/deployments/{id}/upload-url',
  );
  return problems;
}

/**
 * Every problem of a create body at once (docs/api.md, Errors), in this order: its deployment
 * type, its resource_spec against defaults and `ceilings`, then its source fields.
 */
export function createDeploymentProblems(
  source: DeploymentSource,
  body: DeploymentCreateInput,
  ceilings: ResourceCeilings,
): InputProblem[] {
  return [
    ...deploymentTypeProblems(source, body),
    ...resourceSpecInputProblems(
      (body.source_config.resource_spec ?? {}) as ResourceSpecInput,
      createDeploymentType(source, body),
      ceilings,
    ),
    ...sourceFieldProblems(source, body),
  ];
}

/** PATCH: as at create, only image deployments carry an image_uri. */
export function patchImageProblems(source: DeploymentSource, imageUri: string | null | undefined): InputProblem[] {
  if (isImageSource(source) || imageUri == null) return [];
  return [valueError(IMAGE_URI, 'image_uri is only for external_container and internal_docker deployments')];
}

/** A new revision of an image deployment must have an image (the merged config's `image_uri`). */
export function revisionImageProblems(source: DeploymentSource, imageUri: string | null | undefined): InputProblem[] {
  if (!isImageSource(source) || imageUri) return [];
  return [bodyProblem(IMAGE_URI, 'missing', `Field required for ${source} deployments`)];
}

/**
 * On the embedded runtime (`external_container` without a listener) `image_pull_secrets` name
 * the deployment's own secrets: each must exist and hold a Docker config JSON or user:password.
 * On a listener they name Kubernetes Secrets of its namespace, which Slipway cannot see.
 */
export function imagePullSecretInputProblems(
  source: DeploymentSource,
  listenerId: string | null | undefined,
  spec: Pick<ResourceSpec, 'image_pull_secrets'>,
  secrets: readonly SecretEntry[],
): InputProblem[] {
  if (source !== 'external_container' || listenerId) return [];
  return pullSecretProblems(spec.image_pull_secrets, secrets).map((p) =>
    resourceSpecProblem(['image_pull_secrets', p.index, 'name'], 'value_error', `Value error, ${p.message}`),
  );
}
