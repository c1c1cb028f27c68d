import { urlPasswords, type Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import type { DataSource } from '@slipway/db';
import { deploymentDatabaseName, isImageSource, type DeploymentSource, type SecretEntry } from '@slipway/domain';
import { RevisionReads, type InstancesRow } from '@slipway/pipeline';
import {
  imageAgentServer,
  instanceEnvironment,
  readArtifact,
  tracingEnvironment,
  type ImageCache,
  type StartInstancesInput,
} from '@slipway/runtime';
import { revisionImage } from './revision-image.js';
import type { DeploymentDataAccess } from './provisioning/deployment-data-access.js';

type RevisionRow = InstancesRow;

/**
 * A revision's runtime input, and (image revisions) whether its image is an agent server, which
 * the rollout records on the revision for the serving gate and the API (`agent_server`): every
 * `internal_docker` image (only the deploy CLIs push them, of `langgraph build` images), and an
 * `external_container` image whose configuration says so (`imageAgentServer`).
 */
export interface RevisionInput extends StartInstancesInput {
  agentServer?: { auth_path: string | null } | null;
}

/** `min_scale` instances (at least 1), never more than `max_scale`. */
export function instanceCount(spec: { min_scale?: number; max_scale?: number } | null): number {
  const min = Math.max(1, Math.floor(Number(spec?.min_scale ?? 1)) || 1);
  const max = Math.floor(Number(spec?.max_scale));
  return Number.isFinite(max) && max >= 1 ? Math.min(min, max) : min;
}

/**
 * A cloud-hosted revision's runtime input (artifact, environment, scale, limits), read once per
 * revision and kept: a revision never changes. Throws ArtifactError for a bad artifact.
 */
export class RevisionInputs {
  private readonly cache = new Map<string, Promise<RevisionInput>>();

  constructor(
    private readonly config: Readonly<Config>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
    private readonly dataAccess: DeploymentDataAccess,
    /** Unpacked images (null: no container runtime, so image revisions fail saying why). */
    private readonly images: ImageCache | null = null,
  ) {}

  get(revisionId: string): Promise<RevisionInput> {
    let found = this.cache.get(revisionId);
    if (!found) {
      found = this.load(revisionId);
      this.cache.set(revisionId, found);
      found.catch(() => this.cache.delete(revisionId));
    }
    return found;
  }

  private async load(revisionId: string): Promise<RevisionInput> {
    const r = await new RevisionReads(this.dataSource.manager).loadForInstances(revisionId);
    if (!r) throw new Error(`Revision ${revisionId} is gone.`);
    const secrets = this.secrets.openSecrets(r.secrets_sealed, revisionId);
    const { masked = [], ...runs } = await this.whatRuns(r, revisionId, secrets);
    const spec = r.resource_spec;
    // The deployment's own role and Redis user (provisioned again here, so their passwords are current).
    const data = await this.dataAccess.environment(
      r.deployment_id,
      r.database_name ?? deploymentDatabaseName(r.name, r.deployment_id),
    );
    const own = appSecrets(secrets, spec);
    // Every run the app traces goes to the deployment's tracing project (and to the user's own LangSmith, if set).
    const tracing = tracingEnvironment({
      secrets: own,
      enabled: r.tracing,
      front: data.tracing,
      project: r.name,
      revisionId,
    });
    return {
      revisionId,
      deploymentId: r.deployment_id,
      ...runs,
      env: instanceEnvironment({
        base: runs.artifact?.env ?? imageEnvironment(runs.image?.config.env, data.env.REDIS_PREFIX),
        secrets: own,
        data: { ...tracing, ...data.env },
      }),
      // The deployment's own store passwords and trace credential are masked like its secrets wherever logs go.
      secretValues: [
        ...secrets.map((s) => s.value),
        ...masked,
        ...urlPasswords(data.env.DATABASE_URI),
        ...urlPasswords(data.env.REDIS_URI),
        data.tracing.apiKey,
      ],
      scale: instanceCount(spec),
      limits: { memoryMb: positive(spec?.memory_mb), cpu: positive(spec?.cpu) },
      ...(spec?.queue_enabled
        ? {
            queue: {
              scale: instanceCount({ min_scale: spec.queue_min_scale, max_scale: spec.queue_max_scale }),
              limits: { memoryMb: positive(spec.queue_memory_mb), cpu: positive(spec.queue_cpu) },
            },
          }
        : {}),
      frontPorts: data.frontPorts,
    };
  }

  /**
   * The artifact a process runs, or (image sources) the image a container runs and the forms of
   * its pull credential (`masked`, beside the secrets' values).
   */
  private async whatRuns(
    r: RevisionRow,
    revisionId: string,
    secrets: readonly SecretEntry[],
  ): Promise<
    Pick<RevisionInput, 'artifactRef' | 'artifact' | 'image' | 'notes' | 'agentServer'> & { masked?: string[] }
  > {
    if (isImageSource(r.source as DeploymentSource)) {
      const { image, notes, masked } = await revisionImage(this.config, this.images, r, secrets);
      const agentServer =
        imageAgentServer(image.config) ?? (r.source === 'internal_docker' ? { auth_path: null } : null);
      return { artifactRef: r.image_uri ?? image.digest, image, notes, masked, agentServer };
    }
    if (!r.artifact_ref) throw new Error(`Revision ${revisionId} has no artifact.`);
    const artifact = await readArtifact(r.artifact_ref);
    return {
      artifactRef: r.artifact_ref,
      artifact,
      notes: artifact.warnings.map((line) => ({ line, level: 'warn' as const })),
    };
  }
}

/**
 * The secrets an instance's environment gets: all but those `image_pull_secrets` names. A pull
 * credential is for the puller only, as on Kubernetes, where pull secrets never reach a container.
 */
function appSecrets(
  secrets: readonly SecretEntry[],
  spec: { image_pull_secrets?: Array<{ name: string }> } | null,
): SecretEntry[] {
  const pull = new Set((spec?.image_pull_secrets ?? []).map((p) => p.name));
  return secrets.filter((s) => !pull.has(s.name));
}

function positive(value: unknown): number | undefined {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * An image's environment: its own `Env`, then `REDIS_KEY_PREFIX` (the official Python agent
 * server's key prefix setting) under the deployment's REDIS_PREFIX, the only keys its Redis user
 * may touch; a secret of that name overrides it (docs/operations.md, The container runtime).
 */
function imageEnvironment(
  env: Record<string, string> | undefined,
  redisPrefix: string,
): Record<string, string> | undefined {
  return env && { ...env, REDIS_KEY_PREFIX: `${redisPrefix}:` };
}
