import type { Quotas } from '@slipway/domain';
import { queryRows, type EntityManager } from '@slipway/db';

/**
 * The deletes of the retention pass (docs/operations.md, Quotas and retention). Each is bounded
 * by the quotas in force for the workspace (its override, else the default passed in).
 */
export class RetentionRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Revisions with more log lines than they may keep, and how many they may keep. */
  async revisionsOverLogQuota(
    defaults: Pick<Quotas, 'logLinesPerRevision'>,
  ): Promise<Array<{ revisionId: string; kept: number }>> {
    const rows = await this.overLogQuota('l.revision_id', 'log_lines_per_revision', defaults.logLinesPerRevision);
    return rows.map((r) => ({ revisionId: r.owner, kept: r.kept }));
  }

  /** Deletes a revision's oldest log lines, keeping the newest `kept`. Returns how many went. */
  async trimRevisionLogs(revisionId: string, kept: number): Promise<number> {
    const [, count] = (await this.manager.query(
      `DELETE FROM revision_logs WHERE revision_id = $1 AND id < (
         SELECT id FROM revision_logs WHERE revision_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)`,
      [revisionId, kept - 1],
    )) as [unknown, number];
    return count ?? 0;
  }

  /** Workspaces whose log lines together exceed what they may keep, with the excess. */
  async workspacesOverLogQuota(
    defaults: Pick<Quotas, 'logLinesTotal'>,
  ): Promise<Array<{ workspaceId: string; excess: number }>> {
    const rows = await this.overLogQuota('d.workspace_id', 'log_lines_total', defaults.logLinesTotal);
    return rows.map((r) => ({ workspaceId: r.owner, excess: r.count - r.kept }));
  }

  /** Log line counts per owner (revision or workspace) above the owner's quota `column` (else `fallback`). */
  private async overLogQuota(
    owner: 'l.revision_id' | 'd.workspace_id',
    column: 'log_lines_per_revision' | 'log_lines_total',
    fallback: number,
  ): Promise<Array<{ owner: string; count: number; kept: number }>> {
    const rows = await queryRows<{ owner: string; count: string; kept: string }>(
      this.manager,
      `SELECT ${owner} AS owner, count(*) AS count, coalesce(q.${column}, $1) AS kept
         FROM revision_logs l
         JOIN revisions r ON r.id = l.revision_id
         JOIN deployments d ON d.id = r.deployment_id
         LEFT JOIN workspace_quotas q ON q.workspace_id = d.workspace_id
        GROUP BY ${owner}, q.${column}
       HAVING count(*) > coalesce(q.${column}, $1)`,
      [fallback],
    );
    return rows.map((r) => ({ owner: r.owner, count: Number(r.count), kept: Number(r.kept) }));
  }

  /** Deletes the workspace's `count` oldest log lines. */
  async trimWorkspaceLogs(workspaceId: string, count: number): Promise<number> {
    const [, deleted] = (await this.manager.query(
      `DELETE FROM revision_logs WHERE id IN (
         SELECT l.id FROM revision_logs l
           JOIN revisions r ON r.id = l.revision_id
           JOIN deployments d ON d.id = r.deployment_id
          WHERE d.workspace_id = $1
          ORDER BY l.id
          LIMIT $2)`,
      [workspaceId, count],
    )) as [unknown, number];
    return deleted ?? 0;
  }

  /**
   * Deletes upload rows no revision needs, and returns their object paths (the caller removes the
   * files after commit): never completed and older than `abandonedSeconds` (the URL expired long
   * ago), or completed more than `unusedDays` ago and named by no revision. Run in a transaction:
   * candidates are locked first, skipping any a PATCH holds (it share-locks the upload it names
   * until its revision commits), and only then checked for revisions, in a later statement.
   */
  async pruneUploads(abandonedSeconds: number, unusedDays: number): Promise<string[]> {
    const candidates = await queryRows<{ object_path: string }>(
      this.manager,
      `SELECT object_path FROM uploads
        WHERE (completed_at IS NULL AND created_at < now() - make_interval(secs => $1))
           OR (completed_at IS NOT NULL AND completed_at < now() - make_interval(days => $2))
        FOR UPDATE SKIP LOCKED`,
      [abandonedSeconds, unusedDays],
    );
    if (!candidates.length) return [];
    const rows = await queryRows<{ object_path: string }>(
      this.manager,
      `DELETE FROM uploads u
        WHERE u.object_path = ANY($1)
          AND (u.completed_at IS NULL OR NOT EXISTS (
                SELECT 1 FROM revisions r WHERE r.deployment_id = u.deployment_id
                   AND r.source_revision_config->>'source_tarball_path' = u.object_path))
        RETURNING u.object_path`,
      [candidates.map((c) => c.object_path)],
    );
    return rows.map((r) => r.object_path);
  }

  /** Events, and finished outbound webhook deliveries (with their attempts), older than `days`; returns the events deleted. */
  async deleteEventsBefore(days: number): Promise<number> {
    await this.manager.query(
      `DELETE FROM outbound_deliveries WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1)`,
      [days],
    );
    const [, count] = (await this.manager.query(
      `DELETE FROM events WHERE created_at < now() - make_interval(days => $1)`,
      [days],
    )) as [unknown, number];
    return count ?? 0;
  }

  async deleteSentOutboxBefore(hours: number): Promise<number> {
    const [, count] = (await this.manager.query(
      `DELETE FROM outbox WHERE sent_at < now() - make_interval(hours => $1)`,
      [hours],
    )) as [unknown, number];
    return count ?? 0;
  }
}
