/**
 * What create and PATCH make of a valid body (docs/api.md, Deployments), as pure functions: the
 * revision config a deployment starts from, the settings and secrets it stores. The rules a body must
 * meet are the domain's (`createDeploymentProblems` and its neighbours).
 */
import type { StoredRevisionConfig, StoredSourceConfig } from '@slipway/db';
import {
  BadRequestError,
  type DeploymentSource,
  isImageSource,
  mergeSecrets,
  refuseInvalid,
  revisionImageProblems,
  SECRET_MASK,
  type SecretEntry,
} from '@slipway/domain';
import type { SourceConfigInput, SourceRevisionConfigInput } from '../schemas/deployment.schema.js';

const DEFAULT_GRAPH_CONFIG_PATH = 'langgraph.json';

/** The build settings a new revision snapshots from its deployment's source_config. */
export const buildConfigOf = (sc: StoredSourceConfig) => ({
  install_command: sc.install_command ?? null,
  build_command: sc.build_command ?? null,
});

export function revisionConfigFrom(
  input: SourceRevisionConfigInput,
  base: StoredRevisionConfig = {},
): StoredRevisionConfig {
  const graph = input.graph_config_path ?? input.langgraph_config_path;
  const merged: StoredRevisionConfig = { ...base };
  // A new ref or image means the commit must be resolved again, unless the caller pins one.
  if (input.repo_ref != null || input.source_tarball_path != null) merged.repo_commit_sha = null;
  if (input.repo_ref != null) merged.repo_ref = input.repo_ref;
  if (graph != null) merged.graph_config_path = graph;
  if (input.image_uri != null) merged.image_uri = input.image_uri;
  if (input.repo_commit_sha != null) merged.repo_commit_sha = input.repo_commit_sha;
  if (input.source_tarball_path != null) merged.source_tarball_path = input.source_tarball_path;
  // The message and author describe the commit built: another commit (or one to resolve) has its own.
  if ((merged.repo_commit_sha ?? null) !== (base.repo_commit_sha ?? null)) {
    delete merged.repo_commit_message;
    delete merged.repo_commit_author;
  }
  return merged;
}

export function defaultRevisionConfig(source: DeploymentSource): StoredRevisionConfig {
  return isImageSource(source) ? {} : { graph_config_path: DEFAULT_GRAPH_CONFIG_PATH };
}

/**
 * The config of a valid create's first revision, or null for none: `upload` and `internal_docker`
 * deployments have none until a tarball is uploaded or an image pushed.
 */
export function firstRevisionConfig(
  source: DeploymentSource,
  input: SourceRevisionConfigInput,
): StoredRevisionConfig | null {
  if (source === 'upload' || source === 'internal_docker') return null;
  return revisionConfigFrom(input, defaultRevisionConfig(source));
}

/** What a new revision of `source` must have before it is made. */
export function assertBuildable(source: DeploymentSource, config: StoredRevisionConfig): void {
  refuseInvalid(revisionImageProblems(source, config.image_uri));
  if (source === 'upload' && !config.source_tarball_path) {
    throw new BadRequestError(
      'An upload deployment needs source_revision_config.source_tarball_path (from POST /v2/deployments/{id}/upload-url).',
    );
  }
}

/** `incoming` applied to `stored` (C4): a masked value keeps the stored one; one with none to keep → 400. */
export function applySecrets(stored: SecretEntry[], incoming: SecretEntry[]): SecretEntry[] {
  const merged = mergeSecrets(stored, incoming);
  if (merged.unknownMasked.length) {
    throw new BadRequestError(
      `Secret ${merged.unknownMasked.join(', ')} has the masked value '${SECRET_MASK}' but no stored value to keep; send its real value.`,
    );
  }
  return merged.secrets;
}

export function storedSourceConfig(input: SourceConfigInput): StoredSourceConfig {
  const { resource_spec: _spec, deployment_type: _type, ...rest } = input;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as StoredSourceConfig;
}
