import {
  queryRows,
  type BuildConfig,
  type EntityManager,
  type StoredRevisionConfig,
  type StoredSourceConfig,
} from '@slipway/db';
import { REVISION_TERMINAL, type RevisionStatus } from '@slipway/domain';

const TERMINAL = [...REVISION_TERMINAL];

/** What a build needs of its revision and deployment (`loadForBuild`). */
export interface BuildRow {
  status: RevisionStatus;
  attempt: number;
  source: string;
  deployment_id: string;
  integration_id: string | null;
  source_revision_config: StoredRevisionConfig;
  build_config: BuildConfig;
  secrets_sealed: string | null;
  source_config: StoredSourceConfig;
}

/** What decides whether a rollout job is still current (`loadForRollout`). */
export interface RolloutRow {
  status: RevisionStatus;
  attempt: number;
  source: string;
  deployment_id: string;
  deployment_status: string;
  listener_id: string | null;
  /** Whether the deployment's database name is recorded (a listener's create records it). */
  database_recorded: boolean;
}

/** What the instances of a revision are started from (`loadForInstances`). */
export interface InstancesRow {
  deployment_id: string;
  source: string;
  image_uri: string | null;
  image_digest: string | null;
  artifact_ref: string | null;
  resource_spec: {
    min_scale?: number;
    max_scale?: number;
    memory_mb?: number;
    cpu?: number;
    queue_enabled?: boolean;
    queue_min_scale?: number;
    queue_max_scale?: number;
    queue_memory_mb?: number;
    queue_cpu?: number;
    /** Image sources: the secrets holding registry credentials. */
    image_pull_secrets?: Array<{ name: string }>;
  } | null;
  secrets_sealed: string | null;
  name: string;
  database_name: string | null;
  /** `source_config.tracing` (null: not set, tracing on). */
  tracing: boolean | null;
}

/** A started, unfinished revision as the reconciler judges it (`openStarted`). */
export interface OpenRevision {
  id: string;
  deployment_id: string;
  status: RevisionStatus;
  source: string;
  attempt: number;
  overdue: boolean;
  /** Epoch ms of the last sign of life the database has: status change or heartbeat. */
  last_sign_ms: string;
}

/** Who may report on a revision, and with which secrets to redact (`listenerOwnerOf`). */
export interface ListenerOwnerRow {
  deployment_id: string;
  status: RevisionStatus;
  secrets_sealed: string | null;
  listener_id: string | null;
}

/** What a serving proxy's key policy needs of a deployment and its active revision (`servingOf`). */
export interface ServingRow {
  workspace_id: string;
  organization_id: string;
  serving_auth: string | null;
  artifact_ref: string | null;
  /** The active revision's source, and what its rollout recorded of an image (absent: not an agent server). */
  source: string | null;
  agent_server: boolean | null;
  agent_server_auth_path: string | null;
}

/**
 * The named reads of revision rows that the workers, the serving proxy, the listener protocol,
 * the push webhook and the image caches need, each with its own row type: nothing outside this
 * library writes SQL against `revisions` (docs/architecture.md, Libraries). Reads only; writes
 * go through `RevisionFlow`.
 */
export class RevisionReads {
  constructor(private readonly manager: EntityManager) {}

  /** The revision a `build.revision` job builds, with its deployment's source settings, or null. */
  async loadForBuild(revisionId: string): Promise<BuildRow | null> {
    const [row] = await queryRows<BuildRow>(
      this.manager,
      `SELECT r.status, r.attempt, r.source, r.deployment_id, r.source_revision_config, r.build_config, r.secrets_sealed,
              d.source_config, d.integration_id
         FROM revisions r JOIN deployments d ON d.id = r.deployment_id
        WHERE r.id = $1`,
      [revisionId],
    );
    return row ?? null;
  }

  /**
   * The revision a `rollout.revision` job of `attempt` rolls out, or null. The relay adds the job
   * inside the transaction that moves the revision to AWAITING_DEPLOY, so the job can arrive
   * before that commits: a row already AWAITING_DEPLOY at this attempt is read as it is (the
   * hand-off committed; the usual case), anything else again FOR SHARE (call it outside a
   * transaction or in one that may wait), which waits for the relay's row lock, so the
   * committed status is read instead of the job taken for stale. The plain read takes no row
   * lock: a lock is a write, with a commit to flush, for every rollout.
   */
  async loadForRollout(revisionId: string, attempt: number): Promise<RolloutRow | null> {
    const [plain] = await this.rolloutRow(revisionId, '');
    if (plain?.status === 'AWAITING_DEPLOY' && plain.attempt === attempt) return plain;
    const [locked] = await this.rolloutRow(revisionId, 'FOR SHARE OF r');
    return locked ?? null;
  }

  private rolloutRow(revisionId: string, lock: '' | 'FOR SHARE OF r'): Promise<RolloutRow[]> {
    return queryRows<RolloutRow>(
      this.manager,
      `SELECT r.status, r.attempt, r.source, r.deployment_id, d.status AS deployment_status, d.listener_id,
              d.database_name IS NOT NULL AS database_recorded
         FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1 ${lock}`,
      [revisionId],
    );
  }

  /** What a revision's instances start from, or null when it is gone. */
  async loadForInstances(revisionId: string): Promise<InstancesRow | null> {
    const [row] = await queryRows<InstancesRow>(
      this.manager,
      `SELECT r.deployment_id, r.source, r.image_uri, r.image_digest, r.artifact_ref, r.resource_spec, r.secrets_sealed,
              d.name, d.database_name,
              (d.source_config->>'tracing')::boolean AS tracing
         FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1`,
      [revisionId],
    );
    return row ?? null;
  }

  /** The deadline of the revision's current phase, or null (none, or the revision is gone). */
  async deadlineOf(revisionId: string): Promise<Date | null> {
    const [row] = await queryRows<{ deadline_at: Date | null }>(
      this.manager,
      `SELECT deadline_at FROM revisions WHERE id = $1`,
      [revisionId],
    );
    return row?.deadline_at ? new Date(row.deadline_at) : null;
  }

  /** The revision's status, or null when it is gone. */
  async statusOf(revisionId: string): Promise<RevisionStatus | null> {
    const [row] = await queryRows<{ status: RevisionStatus }>(
      this.manager,
      `SELECT status FROM revisions WHERE id = $1`,
      [revisionId],
    );
    return row?.status ?? null;
  }

  /** The revision's status, sealed secrets and its deployment's listener, or null. */
  async listenerOwnerOf(revisionId: string): Promise<ListenerOwnerRow | null> {
    const [row] = await queryRows<ListenerOwnerRow>(
      this.manager,
      `SELECT r.deployment_id, r.status, r.secrets_sealed, d.listener_id
         FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1`,
      [revisionId],
    );
    return row ?? null;
  }

  /** Of these revisions, those BUILDING, with their attempt. */
  async building(revisionIds: readonly string[]): Promise<Array<{ id: string; attempt: number }>> {
    return queryRows<{ id: string; attempt: number }>(
      this.manager,
      `SELECT id, attempt FROM revisions WHERE status = 'BUILDING' AND id = ANY($1::uuid[])`,
      [revisionIds],
    );
  }

  /** The ids of every revision of the deployment. */
  async idsOfDeployment(deploymentId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(this.manager, `SELECT id FROM revisions WHERE deployment_id = $1`, [
      deploymentId,
    ]);
    return rows.map((r) => r.id);
  }

  /** The deployment's revisions in DEPLOYING (waiting on its listener). */
  async deployingOf(deploymentId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM revisions WHERE deployment_id = $1 AND status = 'DEPLOYING'`,
      [deploymentId],
    );
    return rows.map((r) => r.id);
  }

  /** Started revisions not yet finished, oldest first (at most `limit`): the reconciler's sweep. */
  openStarted(limit: number): Promise<OpenRevision[]> {
    return queryRows<OpenRevision>(
      this.manager,
      `SELECT id, deployment_id, status, source, attempt,
              (deadline_at IS NOT NULL AND deadline_at < now()) AS overdue,
              (extract(epoch FROM greatest(status_changed_at, coalesce(heartbeat_at, status_changed_at))) * 1000)::bigint AS last_sign_ms
         FROM revisions
        WHERE status <> ALL($1::text[]) AND started_at IS NOT NULL
        ORDER BY created_at
        LIMIT $2`,
      [TERMINAL, limit],
    );
  }

  /** A deployment's workspace, organization and serving-auth setting, with its active revision's artifact; null when gone. */
  async servingOf(deploymentId: string): Promise<ServingRow | null> {
    const [row] = await queryRows<ServingRow>(
      this.manager,
      `SELECT d.workspace_id, w.organization_id, d.source_config->>'serving_auth' AS serving_auth, r.artifact_ref, r.source,
              (r.source_revision_config->>'agent_server')::boolean AS agent_server,
               r.source_revision_config->>'agent_server_auth_path' AS agent_server_auth_path
         FROM deployments d JOIN workspaces w ON w.id = d.workspace_id
         LEFT JOIN revisions r ON r.id = d.active_revision_id
        WHERE d.id = $1`,
      [deploymentId],
    );
    return row ?? null;
  }

  /**
   * The revision an earlier delivery with the same host delivery id already created for this
   * deployment, if any. Asked under the deployment lock, so two copies of one delivery arriving
   * together cannot both miss each other's revision.
   */
  async fromDelivery(integrationId: string, deliveryId: string, deploymentId: string): Promise<string | null> {
    const [row] = await queryRows<{ id: string }>(
      this.manager,
      `SELECT r.id FROM webhook_deliveries w JOIN revisions r ON r.id = ANY(w.revision_ids)
        WHERE w.integration_id = $1 AND w.delivery_id = $2 AND r.deployment_id = $3
        LIMIT 1`,
      [integrationId, deliveryId, deploymentId],
    );
    return row?.id ?? null;
  }

  /**
   * Image digests some revision of a deployment that is not being deleted runs or may run again
   * (a redeploy): the container runtime keeps these unpacked and removes the rest.
   */
  async imageDigestsInUse(): Promise<Set<string>> {
    const rows = await queryRows<{ image_digest: string }>(
      this.manager,
      `SELECT DISTINCT r.image_digest FROM revisions r JOIN deployments d ON d.id = r.deployment_id
        WHERE r.image_digest IS NOT NULL AND d.status <> 'AWAITING_DELETE'`,
    );
    return new Set(rows.map((r) => r.image_digest));
  }

  /**
   * Per existing deployment, the image digests its revisions run or may run again (a redeploy):
   * what registry garbage collection keeps. A deployment without image revisions maps to an empty set.
   */
  async imageDigestsByDeployment(): Promise<Map<string, Set<string>>> {
    const rows = await queryRows<{ id: string; image_digest: string | null }>(
      this.manager,
      `SELECT d.id, r.image_digest FROM deployments d LEFT JOIN revisions r ON r.deployment_id = d.id AND r.image_digest IS NOT NULL`,
    );
    const byDeployment = new Map<string, Set<string>>();
    for (const r of rows) {
      const digests = byDeployment.get(r.id) ?? new Set<string>();
      if (r.image_digest) digests.add(r.image_digest);
      byDeployment.set(r.id, digests);
    }
    return byDeployment;
  }

  /** Whether some revision of the deployment names the digest (asked again right before a deletion). */
  async deploymentUsesImage(deploymentId: string, digest: string): Promise<boolean> {
    const rows = await queryRows(
      this.manager,
      `SELECT 1 FROM revisions WHERE deployment_id = $1 AND image_digest = $2 LIMIT 1`,
      [deploymentId, digest],
    );
    return rows.length > 0;
  }
}
