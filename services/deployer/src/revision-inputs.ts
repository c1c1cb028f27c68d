import type { Config } from '@slipway/config';
import { SecretBox } from '@slipway/crypto';
import { queryRows, type DataSource } from '@slipway/db';
import { deploymentDatabaseName, isImageSource, type DeploymentSource, type SecretEntry } from '@slipway/domain';
import { instanceEnvironment, readArtifact, type ImageCache, type StartInstancesInput } from '@slipway/runtime';
import { revisionImage, type RevisionImageRow } from './revision-image.js';
import type { DeploymentDataAccess } from './provisioning/data-access.js';

interface RevisionRow extends RevisionImageRow {
  artifact_ref: string | null;
  resource_spec: { min_scale?: number; max_scale?: number; memory_mb?: number; cpu?: number } | null;
  secrets_sealed: string | null;
  name: string;
  database_name: string | null;
}

/** `min_scale` instances (at least 1), never more than `max_scale`. */
export function instanceCount(spec: RevisionRow['resource_spec']): number {
  const min = Math.max(1, Math.floor(Number(spec?.min_scale ?? 1)) || 1);
  const max = Math.floor(Number(spec?.max_scale));
  return Number.isFinite(max) && max >= 1 ? Math.min(min, max) : min;
}

/**
 * A cloud-hosted revision's runtime input (artifact, environment, scale, limits), read once per
 * revision and kept: a revision never changes. Throws ArtifactError for a bad artifact.
 */
export class RevisionInputs {
  private readonly box: SecretBox;
  private readonly cache = new Map<string, Promise<StartInstancesInput>>();

  constructor(
    private readonly config: Readonly<Config>,
    private readonly dataSource: DataSource,
    private readonly dataAccess: DeploymentDataAccess,
    /** Unpacked images (null: no container runtime, so image revisions fail saying why). */
    private readonly images: ImageCache | null = null,
  ) {
    this.box = new SecretBox(config.secretsKey.key, config.previousSecretsKeys);
  }

  get(revisionId: string): Promise<StartInstancesInput> {
    let found = this.cache.get(revisionId);
    if (!found) {
      found = this.load(revisionId);
      this.cache.set(revisionId, found);
      found.catch(() => this.cache.delete(revisionId));
    }
    return found;
  }

  private async load(revisionId: string): Promise<StartInstancesInput> {
    const [r] = await queryRows<RevisionRow>(
      this.dataSource.manager,
      `SELECT r.deployment_id, r.source, r.image_uri, r.image_digest, r.artifact_ref, r.resource_spec, r.secrets_sealed, d.name, d.database_name
         FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1`,
      [revisionId],
    );
    if (!r) throw new Error(`Revision ${revisionId} is gone.`);
    const runs = await this.whatRuns(r, revisionId);
    const secrets: SecretEntry[] = r.secrets_sealed ? JSON.parse(this.box.open(r.secrets_sealed, revisionId)) : [];
    const spec = r.resource_spec;
    // The deployment's own role and Redis user (provisioned again here, so their passwords are current).
    const data = await this.dataAccess.environment(r.deployment_id, r.database_name ?? deploymentDatabaseName(r.name, r.deployment_id));
    return {
      revisionId,
      deploymentId: r.deployment_id,
      ...runs,
      env: instanceEnvironment({ base: runs.artifact?.env ?? runs.image?.config.env, secrets, data: data.env }),
      secretValues: secrets.map((s) => s.value),
      scale: instanceCount(spec),
      limits: { memoryMb: positive(spec?.memory_mb), cpu: positive(spec?.cpu) },
      frontPorts: data.frontPorts,
    };
  }

  /** The artifact a process runs, or (image sources) the image a container runs. */
  private async whatRuns(r: RevisionRow, revisionId: string): Promise<Pick<StartInstancesInput, 'artifactRef' | 'artifact' | 'image' | 'notes'>> {
    if (isImageSource(r.source as DeploymentSource)) {
      const { image, notes } = await revisionImage(this.config, this.images, r);
      return { artifactRef: r.image_uri ?? image.digest, image, notes };
    }
    if (!r.artifact_ref) throw new Error(`Revision ${revisionId} has no artifact.`);
    const artifact = await readArtifact(r.artifact_ref);
    return { artifactRef: r.artifact_ref, artifact, notes: artifact.warnings.map((line) => ({ line, level: 'warn' as const })) };
  }
}

function positive(value: unknown): number | undefined {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}
