import { queryRows, type EntityManager } from '@slipway/db';
import { REVISION_TERMINAL, type Quotas } from '@slipway/domain';
import { writeRevisions } from './status-transitions.js';

const TERMINAL = [...REVISION_TERMINAL];

/** An artifact no kept revision refers to any more: its files can go. */
export interface PrunedArtifact {
  revisionId: string;
  artifactRef: string;
}

/**
 * Retention's revision part (docs/operations.md, Quotas and retention): which deployments keep
 * more built artifacts than they may, and forgetting the oldest through the one revision write.
 */
export class ArtifactRetention {
  constructor(private readonly manager: EntityManager) {}

  /** Deployments holding more built artifacts (besides the active revision's) than they may keep. */
  async deploymentsOverArtifactQuota(defaults: Pick<Quotas, 'artifactsKept'>): Promise<string[]> {
    const rows = await queryRows<{ deployment_id: string }>(
      this.manager,
      `SELECT d.id AS deployment_id
         FROM deployments d
         LEFT JOIN workspace_quotas q ON q.workspace_id = d.workspace_id
         JOIN revisions r ON r.deployment_id = d.id
        WHERE r.artifact_ref IS NOT NULL AND r.source <> 'external_container' AND r.id IS DISTINCT FROM d.active_revision_id
        GROUP BY d.id, q.artifacts_kept
       HAVING count(*) > coalesce(q.artifacts_kept, $1)`,
      [defaults.artifactsKept],
    );
    return rows.map((r) => r.deployment_id);
  }

  /**
   * Forgets the artifacts of one deployment's finished revisions beyond the newest it may keep
   * (the active revision's is never counted or pruned): `artifact_ref` NULL and
   * `artifact_pruned_at` set, so a redeploy rebuilds. An artifact another kept revision still
   * refers to (a redeploy reuses its source's artifact) stays. Call with the deployment row
   * locked, as a redeploy locks it, so a redeploy never copies a ref that is going away.
   * Returns what was forgotten; the caller deletes the files after commit.
   */
  async pruneArtifacts(deploymentId: string, defaults: Pick<Quotas, 'artifactsKept'>): Promise<PrunedArtifact[]> {
    const doomed = await queryRows<PrunedArtifact>(
      this.manager,
      `WITH ranked AS (
         SELECT r.id, r.artifact_ref, r.status,
                row_number() OVER (ORDER BY r.created_at DESC, r.id DESC) AS n,
                coalesce(q.artifacts_kept, $2) AS kept
           FROM revisions r
           JOIN deployments d ON d.id = r.deployment_id
           LEFT JOIN workspace_quotas q ON q.workspace_id = d.workspace_id
          WHERE r.deployment_id = $1 AND r.artifact_ref IS NOT NULL AND r.source <> 'external_container'
            AND r.id IS DISTINCT FROM d.active_revision_id
       ), doomed AS (
         SELECT id, artifact_ref FROM ranked WHERE n > kept AND status = ANY($3)
       )
       SELECT id AS "revisionId", artifact_ref AS "artifactRef" FROM doomed
        WHERE NOT EXISTS (SELECT 1 FROM revisions o WHERE o.artifact_ref = doomed.artifact_ref AND o.id NOT IN (SELECT id FROM doomed))`,
      [deploymentId, defaults.artifactsKept, TERMINAL],
    );
    // The write goes through the one revision write, conditional on the revisions still being finished.
    const pruned = new Set(
      (
        await writeRevisions(
          this.manager,
          doomed.map((d) => d.revisionId),
          { from: TERMINAL, set: { artifactRef: null, artifactPrunedAt: new Date() } },
        )
      ).map((r) => r.revisionId),
    );
    return doomed.filter((d) => pruned.has(d.revisionId));
  }
}
