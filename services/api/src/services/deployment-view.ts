import type { ServingUrls } from '@slipway/config';
import type { Deployment, Revision, StoredRevisionConfig } from '@slipway/db';
import { SECRET_MASK, sourceName } from '@slipway/domain';
import { type PreviewFeedbackState } from '../reads/deployment-reads.js';
import { iso } from '../schemas/common.schema.js';
import { presentPreviewSettings } from './preview-settings.js';

/** How responses name sources (`SLIPWAY_SOURCE_NAMES`, docs/api.md, Deployments). */
export type SourceNames = 'canonical' | 'hosted';

/** A revision config as deployments and revisions show it: every field, null when unset. */
export function presentRevisionConfig(c: StoredRevisionConfig) {
  return {
    repo_ref: c.repo_ref ?? null,
    graph_config_path: c.graph_config_path ?? null,
    image_uri: c.image_uri ?? null,
    repo_commit_sha: c.repo_commit_sha ?? null,
    repo_commit_message: c.repo_commit_message ?? null,
    repo_commit_author: c.repo_commit_author ?? null,
    source_tarball_path: c.source_tarball_path ?? null,
  };
}

/**
 * The API shape of a deployment (docs/api.md, Deployments). Secret values never leave: they are masked.
 * A cloud-hosted deployment's `url` is where it answers (ServingUrls: its name at the edge); its
 * `custom_url` shows that same URL until the user sets one of their own.
 */
export function presentDeployment(
  d: Deployment,
  latest: Pick<Revision, 'sourceRevisionConfig'> | null,
  secretNames: string[],
  tagValueIds: string[],
  urls?: ServingUrls,
  names: SourceNames = 'canonical',
  /** Whether the serving (else latest) revision was built as an agent server; null: none built. */
  agentServer: boolean | null = null,
  /** A forge-opened preview's feedback to its pull request. */
  feedback: PreviewFeedbackState | null = null,
) {
  const config = latest?.sourceRevisionConfig ?? {};
  const servingUrl = urls?.of(d) ?? null;
  return {
    id: d.id,
    name: d.name,
    source: sourceName(d.source, names),
    source_config: {
      integration_id: d.sourceConfig.integration_id ?? null,
      repo_url: d.sourceConfig.repo_url ?? null,
      build_on_push: d.sourceConfig.build_on_push ?? null,
      custom_url: d.sourceConfig.custom_url ?? servingUrl,
      resource_spec: d.resourceSpec,
      listener_id: d.sourceConfig.listener_id ?? null,
      listener_config: d.sourceConfig.listener_config ?? null,
      install_command: d.sourceConfig.install_command ?? null,
      build_command: d.sourceConfig.build_command ?? null,
      deployment_type: d.deploymentType,
      serving_auth: d.sourceConfig.serving_auth ?? null,
      tracing: d.sourceConfig.tracing ?? null,
      previews: presentPreviewSettings(d.sourceConfig.previews),
    },
    source_revision_config: presentRevisionConfig(config),
    secrets: secretNames.map((name) => ({ name, value: SECRET_MASK })),
    status: d.status,
    deployment_type: d.deploymentType,
    latest_revision_id: d.latestRevisionId,
    active_revision_id: d.activeRevisionId,
    image_version: d.imageVersion,
    tenant_id: d.workspaceId,
    tracing_project_id: d.tracingProjectId,
    // The hosted API's name for the same id (LangSmith calls a project a tracer session).
    tracer_session_id: d.tracingProjectId,
    agent_server: agentServer,
    url: servingUrl ?? d.sourceConfig.custom_url ?? null,
    is_preview: d.preview != null,
    preview: d.preview
      ? {
          parent_id: d.previewOf,
          pull_request: d.preview.pull_request,
          expires_at: iso(d.previewExpiresAt),
          feedback: feedback && {
            reported_state: feedback.reported_state,
            attempts: feedback.attempts,
            last_error: feedback.last_error,
            next_attempt_at: new Date(feedback.next_attempt_at).toISOString(),
            updated_at: new Date(feedback.updated_at).toISOString(),
          },
        }
      : null,
    tag_value_ids: tagValueIds,
    created_at: iso(d.createdAt)!,
    updated_at: iso(d.updatedAt)!,
  };
}

export type DeploymentView = ReturnType<typeof presentDeployment>;
