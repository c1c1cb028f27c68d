import { randomUUID } from 'node:crypto';
import type { SecretsCodec } from '@slipway/crypto';
import type { Deployment, EntityManager, Revision, StoredRevisionConfig } from '@slipway/db';
import { RevisionRepository, type NewRevision } from '@slipway/pipeline';
import type { SourceRevisionConfigInput } from '../schemas/deployment.schema.js';
import { defaultRevisionConfig, revisionConfigFrom } from './deployment-rules.js';
import type { ImageResolver, RevisionDraft } from './deployment-types.js';
import { currentActor } from './request-actor.js';

/**
 * How a deployment's new revision is made (docs/api.md, Revisions): its row from a draft (the
 * secrets sealed to the revision, an image checked as the deployment's own, why it exists and
 * who made it), its config from the latest revision's, and an internal_docker revision's image
 * resolved to a digest. DeploymentService inserts what this makes.
 */
export class RevisionRows {
  constructor(
    private readonly secrets: SecretsCodec,
    private readonly images?: ImageResolver,
  ) {}

  /** The row of a new revision of `deployment` snapshotting `draft`, its secrets sealed. */
  row(deployment: Deployment, draft: RevisionDraft): NewRevision {
    const id = randomUUID();
    const imageUri =
      draft.imageUri ?? (draft.source === 'external_container' ? (draft.sourceRevisionConfig.image_uri ?? null) : null);
    if (draft.source === 'external_container' && imageUri) this.images?.assertOwnImage(deployment.id, imageUri);
    return {
      id,
      deploymentId: deployment.id,
      source: draft.source,
      sourceRevisionConfig: draft.sourceRevisionConfig,
      imageUri,
      imageDigest: draft.imageDigest ?? null,
      artifactRef: draft.artifactRef ?? null,
      resourceSpec: draft.resourceSpec,
      secretsSealed: this.secrets.sealSecrets(draft.secrets, id),
      secretNames: draft.secrets.map((s) => s.name),
      secretFingerprints: this.secrets.fingerprints(draft.secrets, deployment.id),
      buildConfig: draft.buildConfig,
      redeployedFrom: draft.redeployedFrom ?? null,
      trigger: draft.trigger,
      createdBy: draft.createdBy ?? currentActor(),
    };
  }

  /** The deployment's latest revision, or null. */
  latest(manager: EntityManager, deployment: Deployment): Promise<Revision | null> {
    return deployment.latestRevisionId
      ? new RevisionRepository(manager).find(deployment.id, deployment.latestRevisionId)
      : Promise.resolve(null);
  }

  /** A new revision's config: the latest revision's (or the source's defaults), with `input` applied. */
  async nextConfig(
    manager: EntityManager,
    deployment: Deployment,
    input: SourceRevisionConfigInput,
  ): Promise<StoredRevisionConfig> {
    const latest = await this.latest(manager, deployment);
    return revisionConfigFrom(input, latest?.sourceRevisionConfig ?? defaultRevisionConfig(deployment.source));
  }

  /**
   * The image an internal_docker revision runs: a new `image_uri` resolved to its digest now (so
   * a tag moved later changes nothing), or else the latest revision's digest.
   */
  async internalImage(
    deployment: Deployment,
    input: SourceRevisionConfigInput,
    latest: Revision | null,
  ): Promise<Pick<RevisionDraft, 'imageUri' | 'imageDigest'>> {
    if (input.image_uri == null)
      return { imageUri: latest?.imageUri ?? null, imageDigest: latest?.imageDigest ?? null };
    if (!this.images) throw new Error('internal_docker revisions need the registry (ImageResolver)');
    const resolved = await this.images.resolveImage(deployment.id, input.image_uri);
    return { imageUri: resolved.imageUri, imageDigest: resolved.digest };
  }
}
