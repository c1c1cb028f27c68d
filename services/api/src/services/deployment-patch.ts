import type { SecretsCodec } from '@slipway/crypto';
import { DeploymentRepository, type Deployment, type EntityManager, type StoredSourceConfig } from '@slipway/db';
import {
  imagePullSecretInputProblems,
  patchCreatesRevision,
  refuseInvalid,
  resolveResourceSpecWithin,
  type ResourceCeilings,
  resourceSpecInputProblems,
} from '@slipway/domain';
import type { PatchDeploymentBody } from '../schemas/deployment.schema.js';
import { assertPatchable } from './deployment-checks.js';
import {
  applySecrets,
  assertBuildable,
  buildConfigOf,
  defaultRevisionConfig,
  revisionConfigFrom,
} from './deployment-rules.js';
import type { RevisionDraft } from './deployment-types.js';
import type { DomainClaims } from './domain.service.js';
import { assertPodPolicy } from './pod-policy-check.js';
import { storedPreviewSettings } from './preview-settings.js';
import type { QuotaService } from './quota.service.js';
import { assertUploadCompleted } from './upload.service.js';
import type { RevisionRows } from './revision-rows.js';

/** What a PATCH is given by DeploymentService, which locks the row before and adds the revision after. */
export interface DeploymentPatchDeps {
  secrets: SecretsCodec;
  quotas: QuotaService;
  ceilings: ResourceCeilings;
  /** How a new revision's row, config and image are made from a draft. */
  rows: RevisionRows;
  /** `source_config.custom_url` claims its host on Slipway's own runtime (docs/api.md, Domains). */
  domains?: DomainClaims;
}

/** The source_config fields a PATCH replaces as given; the others are immutable or merged. */
const REPLACED_SOURCE_CONFIG_FIELDS = [
  'build_on_push',
  'custom_url',
  'install_command',
  'build_command',
  'serving_auth',
  'tracing',
] as const;

/**
 * PATCH of a locked deployment (docs/api.md, Deployments): its source config, resources and
 * secrets are checked and written, and what the body asks of its revisions becomes a draft for
 * DeploymentService to add. Kept apart from create, which writes a deployment that is not there yet.
 */
export class DeploymentPatch {
  constructor(private readonly deps: DeploymentPatchDeps) {}

  /**
   * Writes `body` to `deployment` (locked by the caller) and answers the draft of the revision it
   * makes: one when a revision field changed, an upload completed, or `revisionTrigger` asks for
   * one even without (`POST .../revisions`, a preview's rollout); otherwise null.
   */
  async apply(
    manager: EntityManager,
    deployment: Deployment,
    body: PatchDeploymentBody,
    revisionTrigger: 'api_revision' | 'preview' | null,
  ): Promise<RevisionDraft | null> {
    const { secrets: codec, quotas, ceilings, rows, domains } = this.deps;
    const { id, workspaceId } = deployment;
    assertPatchable(deployment, body);

    const input = body.source_config ?? {};
    const sourceConfig: StoredSourceConfig = { ...deployment.sourceConfig };
    for (const field of REPLACED_SOURCE_CONFIG_FIELDS) {
      if (input[field] != null) (sourceConfig as Record<string, unknown>)[field] = input[field];
    }
    if (input.previews != null)
      sourceConfig.previews = storedPreviewSettings(input.previews, deployment.sourceConfig.previews, codec, id);
    let resourceSpec = deployment.resourceSpec;
    if (input.resource_spec != null) {
      refuseInvalid(resourceSpecInputProblems(input.resource_spec, deployment.deploymentType, ceilings));
      resourceSpec = resolveResourceSpecWithin(input.resource_spec, deployment.deploymentType, ceilings);
      await assertPodPolicy(manager, workspaceId, deployment.listenerId, deployment.name, resourceSpec);
      await quotas.assertScale(manager, workspaceId, resourceSpec);
    }

    let secrets = codec.openSecrets(deployment.secretsSealed, deployment.id);
    if (body.secrets != null) secrets = applySecrets(secrets, body.secrets);
    if (body.secrets != null || input.resource_spec != null)
      refuseInvalid(imagePullSecretInputProblems(deployment.source, deployment.listenerId, resourceSpec, secrets));

    if (input.custom_url != null && input.custom_url !== deployment.sourceConfig.custom_url)
      await domains?.followCustomUrl(manager, deployment, input.custom_url);
    await new DeploymentRepository(manager).applyPatch(id, {
      sourceConfig,
      resourceSpec,
      secretsSealed: codec.sealSecrets(secrets, id),
      imageVersion: body.image_version ?? deployment.imageVersion,
      secretNames: secrets.map((s) => s.name),
    });

    const revisionInput = body.source_revision_config ?? {};
    const uploadRevision = body.revision_source != null && revisionInput.source_tarball_path != null;
    // Only a completed upload of this very deployment may be built (C10), never a guessed path.
    if (revisionInput.source_tarball_path != null)
      await assertUploadCompleted(manager, id, revisionInput.source_tarball_path);
    if (!revisionTrigger && !patchCreatesRevision(body) && !uploadRevision) return null;
    const latest = await rows.latest(manager, deployment);
    const revisionConfig = revisionConfigFrom(
      revisionInput,
      latest?.sourceRevisionConfig ?? defaultRevisionConfig(deployment.source),
    );
    assertBuildable(deployment.source, revisionConfig);
    return {
      trigger:
        revisionTrigger ??
        (uploadRevision
          ? 'upload'
          : body.revision_source === 'internal_docker' && revisionInput.image_uri != null
            ? 'image_push'
            : 'patch'),
      source: deployment.source,
      sourceRevisionConfig: revisionConfig,
      resourceSpec,
      secrets,
      buildConfig: buildConfigOf(sourceConfig),
      ...(deployment.source === 'internal_docker' ? await rows.internalImage(deployment, revisionInput, latest) : {}),
    };
  }
}
