/**
 * Per-source rules of create and PATCH (docs/api.md, Deployments), as pure functions: what a
 * request must and must not carry for its source, and the revision config it starts from.
 */
import type { StoredRevisionConfig, StoredSourceConfig } from '@slipway/db';
import {
  BadRequestError,
  capResourceSpec,
  isImageSource,
  isSelfHosted,
  pullSecretProblems,
  resolveResourceSpec,
  resourceSpecProblems,
  type DeploymentSource,
  type DeploymentType,
  type ResourceCeilings,
  type ResourceSpec,
  type ResourceSpecInput,
  type SecretEntry,
} from '@slipway/domain';
import { RequestValidationError, type ValidationIssue } from '../http/validation-error.js';
import type { CreateDeploymentBody, SourceConfigInput, SourceRevisionConfigInput } from '../schemas/deployment.schema.js';

const DEFAULT_GRAPH_CONFIG_PATH = 'langgraph.json';

/** The build settings a new revision snapshots from its deployment's source_config. */
export const buildConfigOf = (sc: StoredSourceConfig) => ({ install_command: sc.install_command ?? null, build_command: sc.build_command ?? null });

export const issue = (loc: Array<string | number>, type: string, msg: string): ValidationIssue => ({ loc: ['body', ...loc], msg, type });

export function revisionConfigFrom(input: SourceRevisionConfigInput, base: StoredRevisionConfig = {}): StoredRevisionConfig {
  const graph = input.graph_config_path ?? input.langgraph_config_path;
  const merged: StoredRevisionConfig = { ...base };
  // A new ref or image means the commit must be resolved again, unless the caller pins one.
  if (input.repo_ref != null || input.source_tarball_path != null) merged.repo_commit_sha = null;
  if (input.repo_ref != null) merged.repo_ref = input.repo_ref;
  if (graph != null) merged.graph_config_path = graph;
  if (input.image_uri != null) merged.image_uri = input.image_uri;
  if (input.repo_commit_sha != null) merged.repo_commit_sha = input.repo_commit_sha;
  if (input.source_tarball_path != null) merged.source_tarball_path = input.source_tarball_path;
  return merged;
}

export function deploymentTypeFor(source: DeploymentSource, body: CreateDeploymentBody, issues: ValidationIssue[]): DeploymentType | null {
  const given = (body.deployment_type ?? body.source_config.deployment_type ?? null) as DeploymentType | null;
  if (isSelfHosted(source)) {
    if (given !== null) {
      const loc = body.deployment_type != null ? ['deployment_type'] : ['source_config', 'deployment_type'];
      issues.push(issue(loc, 'value_error', 'Value error, deployment_type must be null for external_container deployments'));
    }
    return null;
  }
  return given ?? 'dev';
}

/** The spec with every default filled in (within the operator's ceilings); its problems are added to `issues`. */
export function resolveSpec(
  input: Record<string, unknown>,
  type: DeploymentType | null,
  ceilings: ResourceCeilings,
  loc: string[],
  issues: ValidationIssue[],
): ResourceSpec {
  const { spec, problems } = capResourceSpec(input, resolveResourceSpec(input as ResourceSpecInput, type), ceilings);
  for (const { field, message } of problems) issues.push(issue([...loc, field], 'less_than_equal', message));
  for (const [field, message] of resourceSpecProblems(spec)) issues.push(issue([...loc, field], 'value_error', `Value error, ${message}`));
  return spec;
}

export function defaultRevisionConfig(source: DeploymentSource): StoredRevisionConfig {
  return isImageSource(source) ? {} : { graph_config_path: DEFAULT_GRAPH_CONFIG_PATH };
}

/**
 * Per-source rules of create, added to `issues`; returns the first revision's config, or null
 * for none (meaningful only when no issue was found). `upload` and `internal_docker`
 * deployments have none until a tarball is uploaded or an image pushed.
 */
export function validateCreate(source: DeploymentSource, body: CreateDeploymentBody, issues: ValidationIssue[]): StoredRevisionConfig | null {
  const sc = body.source_config;
  const src = body.source_revision_config;
  const required = (loc: string[], value: unknown, why: string) => {
    if (value == null || value === '') issues.push(issue(loc, 'missing', `Field required ${why}`));
  };
  const forbidden = (loc: string[], value: unknown, why: string) => {
    if (value != null) issues.push(issue(loc, 'value_error', `Value error, ${loc.at(-1)} ${why}`));
  };
  if (source === 'repohost') {
    required(['source_config', 'integration_id'], sc.integration_id, 'for repohost deployments');
    required(['source_config', 'repo_url'], sc.repo_url, 'for repohost deployments');
    forbidden(['source_config', 'listener_id'], sc.listener_id, 'is only for external_container deployments');
    forbidden(['source_revision_config', 'image_uri'], src.image_uri, 'is only for external_container deployments');
  } else if (source === 'external_container') {
    // listener_id may be left out: required when the workspace has listeners (checked at write).
    required(['source_revision_config', 'image_uri'], src.image_uri, 'for external_container deployments');
    forbidden(['source_config', 'integration_id'], sc.integration_id, 'is only for repohost deployments');
    forbidden(['source_config', 'repo_url'], sc.repo_url, 'is only for repohost deployments');
  } else {
    // Neither an integration nor a repository (C4), nor a listener; an internal_docker image
    // is pushed first and named by a PATCH.
    forbidden(['source_config', 'listener_id'], sc.listener_id, 'is only for external_container deployments');
    forbidden(['source_config', 'integration_id'], sc.integration_id, 'is only for repohost deployments');
    forbidden(['source_config', 'repo_url'], sc.repo_url, 'is only for repohost deployments');
    const imageWhy = source === 'internal_docker' ? 'is set by a PATCH after pushing the image (POST /v2/deployments/{id}/push-token)' : 'is only for external_container deployments';
    forbidden(['source_revision_config', 'image_uri'], src.image_uri, imageWhy);
  }
  // An upload belongs to a deployment, so none can exist yet: a path here could only be guessed (C10).
  forbidden(['source_revision_config', 'source_tarball_path'], src.source_tarball_path, 'is set by a PATCH after uploading through POST /v2/deployments/{id}/upload-url');
  if (source === 'upload' || source === 'internal_docker') return null;
  return revisionConfigFrom(src, defaultRevisionConfig(source));
}

/** What a new revision of `source` must have before it is made. */
export function assertBuildable(source: DeploymentSource, config: StoredRevisionConfig): void {
  if (isImageSource(source) && !config.image_uri) {
    throw new RequestValidationError([issue(['source_revision_config', 'image_uri'], 'missing', `Field required for ${source} deployments`)]);
  }
  if (source === 'upload' && !config.source_tarball_path) {
    throw new BadRequestError('An upload deployment needs source_revision_config.source_tarball_path (from POST /v2/deployments/{id}/upload-url).');
  }
}

export function storedSourceConfig(input: SourceConfigInput): StoredSourceConfig {
  const { resource_spec: _spec, deployment_type: _type, ...rest } = input;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as StoredSourceConfig;
}

/**
 * On the embedded runtime (`external_container` without a listener) `image_pull_secrets` name
 * the deployment's own secrets: each must exist and hold a Docker config JSON or user:password.
 * On a listener they name Kubernetes Secrets of its namespace, which Slipway cannot see.
 */
export function assertPullSecrets(source: DeploymentSource, listenerId: string | null | undefined, spec: ResourceSpec, secrets: readonly SecretEntry[]): void {
  if (source !== 'external_container' || listenerId) return;
  const problems = pullSecretProblems(spec.image_pull_secrets, secrets);
  if (!problems.length) return;
  throw new RequestValidationError(
    problems.map((p) => issue(['source_config', 'resource_spec', 'image_pull_secrets', p.index, 'name'], 'value_error', `Value error, ${p.message}`)),
  );
}
