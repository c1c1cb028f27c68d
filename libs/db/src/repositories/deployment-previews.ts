import type { EntityManager } from 'typeorm';
import type { PreviewRecord } from '../entities/deployment.entity.js';
import { queryRows } from '../sql.js';

/** What a pull request is told of its preview: pending while it builds and rolls out, then success or failure. */
export type FeedbackState = 'pending' | 'success' | 'failure';

/** A forge-opened preview whose latest revision's state the pull request has not been told yet. */
export interface FeedbackDue {
  deploymentId: string;
  parentId: string;
  parentName: string;
  integrationId: string | null;
  preview: PreviewRecord;
  source: string;
  servingPort: number | null;
  edgeName: string | null;
  revisionId: string;
  status: string;
  statusMessage: string | null;
  state: FeedbackState;
}

/** A fork's pull request waiting for approval. */
export interface PreviewRequest {
  number: number;
  headRef: string;
  headSha: string;
  url: string | null;
  repository: string | null;
  forkRepository: string | null;
  /** Whether the parent's approval label was on the pull request when this head arrived (or since its last removal). */
  labeled: boolean;
}

/** A `preview_requests` row as the repository gives it. */
function requestOf(row: Record<string, any>): PreviewRequest & { receivedAt: Date } {
  return {
    number: row.number,
    headRef: row.head_ref,
    headSha: row.head_sha,
    url: row.url,
    repository: row.repository,
    forkRepository: row.fork_repository,
    labeled: row.labeled,
    receivedAt: row.received_at,
  };
}

/** Where a page of forge-opened previews ended (PreviewRepository.forgeOpened). */
export interface ForgeOpenedCursor {
  /** Postgres' own text of the time (microseconds: a Date would round it and meet the same row again). */
  createdAt: string;
  id: string;
}

/** A preview of a parent, as its life cycle needs it. */
export interface PreviewRow {
  id: string;
  name: string;
  number: number;
  lastActivityAt: Date;
}

/**
 * The previews of a parent deployment (docs/api.md, Previews): preview rows are deployments with
 * `preview_of` set (migration 1765000000400); these are their named reads. Their writes are the
 * deployment row's, `DeploymentRepository`'s (`markPreview`, `markPreviewEnding`).
 */
export class PreviewRepository {
  constructor(private readonly manager: EntityManager) {}

  /** The parent's previews not being deleted, least recently active first. */
  async active(parentId: string): Promise<PreviewRow[]> {
    const rows = await queryRows<{ id: string; name: string; number: number; last_activity_at: Date }>(
      this.manager,
      `SELECT id, name, (preview->'pull_request'->>'number')::int AS number, last_activity_at
         FROM deployments WHERE preview_of = $1 AND status <> 'AWAITING_DELETE'
        ORDER BY last_activity_at, created_at`,
      [parentId],
    );
    return rows.map((r) => ({ id: r.id, name: r.name, number: Number(r.number), lastActivityAt: r.last_activity_at }));
  }

  /** The parent's preview of pull request `number` (being deleted or not), or null. */
  async byNumber(parentId: string, number: number): Promise<{ id: string; deleting: boolean } | null> {
    const [row] = await queryRows<{ id: string; status: string }>(
      this.manager,
      `SELECT id, status FROM deployments WHERE preview_of = $1 AND (preview->'pull_request'->>'number')::int = $2`,
      [parentId, number],
    );
    return row ? { id: row.id, deleting: row.status === 'AWAITING_DELETE' } : null;
  }

  /** The number after the highest the parent's previews used. */
  async nextNumber(parentId: string): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      this.manager,
      `SELECT coalesce(max((preview->'pull_request'->>'number')::int), 0) + 1 AS n FROM deployments WHERE preview_of = $1`,
      [parentId],
    );
    return Number(row!.n);
  }

  /** The parent's previews not being deleted, locked (the parent's delete takes them along). */
  async lockActiveIds(parentId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM deployments WHERE preview_of = $1 AND status <> 'AWAITING_DELETE' ORDER BY id FOR UPDATE`,
      [parentId],
    );
    return rows.map((r) => r.id);
  }

  /** Previews past their expiry whose delete has not started, soonest expired first. */
  async expired(limit = 100): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM deployments WHERE preview_of IS NOT NULL AND status <> 'AWAITING_DELETE' ` +
        `AND preview_expires_at < now() ORDER BY preview_expires_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  /** Locks the preview if it is still past its expiry (a rollout may have extended it since it was listed). */
  async lockIfExpired(id: string): Promise<boolean> {
    return (
      (
        await queryRows(
          this.manager,
          `SELECT 1 FROM deployments WHERE id = $1 AND preview_expires_at < now() FOR UPDATE`,
          [id],
        )
      ).length > 0
    );
  }

  /** Whether a deployment of this name exists in the workspace. */
  async nameTaken(workspaceId: string, name: string): Promise<boolean> {
    return (
      (
        await queryRows(this.manager, `SELECT 1 FROM deployments WHERE workspace_id = $1 AND name = $2`, [
          workspaceId,
          name,
        ])
      ).length > 0
    );
  }

  /** Forge-opened previews whose latest revision's state differs from what was last reported, due for an attempt. */
  async feedbackDue(limit = 20): Promise<FeedbackDue[]> {
    const rows = await queryRows<Record<string, any>>(
      this.manager,
      `WITH latest AS (
         SELECT d.id, d.preview_of, p.name AS parent_name, d.integration_id, d.preview, d.source, d.serving_port, d.edge_name,
                r.id AS revision_id, r.status, r.status_message,
                CASE WHEN r.status = 'DEPLOYED' THEN 'success'
                     WHEN r.status IN ('BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED') THEN 'failure'
                     ELSE 'pending' END AS state
           FROM deployments d
           JOIN deployments p ON p.id = d.preview_of
           JOIN revisions r ON r.id = d.latest_revision_id
          WHERE d.preview_of IS NOT NULL AND d.preview ? 'repository' AND d.preview->>'repository' IS NOT NULL ` +
        `AND d.status <> 'AWAITING_DELETE')
       SELECT l.* FROM latest l LEFT JOIN preview_feedback f ON f.deployment_id = l.id
        WHERE f.deployment_id IS NULL
           OR ((f.reported_revision IS DISTINCT FROM l.revision_id OR f.reported_state IS DISTINCT ` +
        `FROM l.state) AND f.next_attempt_at <= now())
        LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({
      deploymentId: r.id,
      parentId: r.preview_of,
      parentName: r.parent_name,
      integrationId: r.integration_id,
      preview: r.preview,
      source: r.source,
      servingPort: r.serving_port,
      edgeName: r.edge_name,
      revisionId: r.revision_id,
      status: r.status,
      statusMessage: r.status_message,
      state: r.state,
    }));
  }

  /** Makes sure the preview has its feedback row (the lock of its reports), outside any transaction. */
  async ensureFeedbackRow(deploymentId: string): Promise<void> {
    await this.manager.query(`INSERT INTO preview_feedback (deployment_id) VALUES ($1) ON CONFLICT DO NOTHING`, [
      deploymentId,
    ]);
  }

  /** Locks the preview's feedback row, or false when another worker is reporting it now. */
  async lockFeedback(deploymentId: string): Promise<boolean> {
    return (
      (
        await queryRows(
          this.manager,
          `SELECT 1 FROM preview_feedback WHERE deployment_id = $1 FOR UPDATE SKIP LOCKED`,
          [deploymentId],
        )
      ).length > 0
    );
  }

  /** Told: this revision in this state. */
  async reported(deploymentId: string, revisionId: string, state: FeedbackState): Promise<void> {
    await this.manager.query(
      `UPDATE preview_feedback SET reported_revision = $2, reported_state = $3, attempts = 0, ` +
        `last_error = NULL, next_attempt_at = now(), updated_at = now() WHERE deployment_id = $1`,
      [deploymentId, revisionId, state],
    );
  }

  /**
   * The forge could not be told: kept with its error and tried again after a backoff (30 s
   * doubling); after `maxAttempts`, that state is given up (marked reported, the error kept).
   */
  async reportFailed(
    deploymentId: string,
    revisionId: string,
    state: FeedbackState,
    error: string,
    maxAttempts: number,
  ): Promise<void> {
    await this.manager.query(
      `UPDATE preview_feedback
          SET attempts = attempts + 1, last_error = $4, failed_state = $3, updated_at = now(),
              next_attempt_at = now() + make_interval(secs => 30 * power(2, least(attempts, 8))),
              reported_revision = CASE WHEN attempts + 1 >= $5 THEN $2::uuid ELSE reported_revision END,
              reported_state = CASE WHEN attempts + 1 >= $5 THEN $3 ELSE reported_state END
        WHERE deployment_id = $1`,
      [deploymentId, revisionId, state, error.slice(0, 1000), maxAttempts],
    );
  }

  /** Records (or replaces, for a new head) a fork's pull request waiting for approval. */
  async requestApproval(parentId: string, request: PreviewRequest): Promise<void> {
    await this.manager.query(
      `INSERT INTO preview_requests (parent_id, number, head_ref, head_sha, url, repository, fork_repository, labeled) ` +
        `VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (parent_id, number) DO UPDATE SET head_ref = EXCLUDED.head_ref, head_sha = EXCLUDED.head_sha, url = EXCLUDED.url,
         repository = EXCLUDED.repository, fork_repository = EXCLUDED.fork_repository, labeled = EXCLUDED.labeled,
         received_at = now()`,
      [
        parentId,
        request.number,
        request.headRef,
        request.headSha,
        request.url,
        request.repository,
        request.forkRepository,
        request.labeled,
      ],
    );
  }

  /**
   * Takes (removes and returns) the request waiting for approval, or null: only at `match.headSha`
   * when given, and only if the approval label was off when it arrived when `match.unlabeled`.
   */
  async takeRequest(
    parentId: string,
    number: number,
    match: { headSha?: string; unlabeled?: boolean } = {},
  ): Promise<PreviewRequest | null> {
    const params: unknown[] = [parentId, number];
    let where = 'parent_id = $1 AND number = $2';
    if (match.headSha) where += ` AND head_sha = $${params.push(match.headSha)}`;
    if (match.unlabeled) where += ' AND NOT labeled';
    const [row] = await queryRows<Record<string, any>>(
      this.manager,
      `DELETE FROM preview_requests WHERE ${where} RETURNING *`,
      params,
    );
    return row ? requestOf(row) : null;
  }

  /** The pull requests of forks waiting for approval, newest first, with when each head arrived. */
  async waiting(parentId: string): Promise<Array<PreviewRequest & { receivedAt: Date }>> {
    const rows = await queryRows<Record<string, any>>(
      this.manager,
      `SELECT * FROM preview_requests WHERE parent_id = $1 ORDER BY received_at DESC, number DESC LIMIT 500`,
      [parentId],
    );
    return rows.map(requestOf);
  }

  /** The approval label is off the pull request: whatever waits may be approved by adding it again. */
  async labelRemoved(parentId: string, number: number): Promise<void> {
    await this.manager.query(`UPDATE preview_requests SET labeled = false WHERE parent_id = $1 AND number = $2`, [
      parentId,
      number,
    ]);
  }

  /** The database a new preview copies (its parent's, when the parent's previews say `database: "copy"` and it has one), or null. */
  async copySource(previewId: string): Promise<string | null> {
    const [row] = await queryRows<{ database_name: string | null }>(
      this.manager,
      `SELECT p.database_name FROM deployments d JOIN deployments p ON p.id = d.preview_of
        WHERE d.id = $1 AND p.source_config->'previews'->>'database' = 'copy'`,
      [previewId],
    );
    return row?.database_name ?? null;
  }

  /**
   * Previews a forge opened and not being deleted, oldest first, `limit` at a time: the page after
   * `after` (the last one of the page before), so successive checks of still-open pull requests
   * go through all of them, not the same oldest ones each time.
   */
  async forgeOpened(
    limit = 200,
    after: ForgeOpenedCursor | null = null,
  ): Promise<
    Array<{ id: string; integrationId: string | null; repository: string; number: number; cursor: ForgeOpenedCursor }>
  > {
    const rows = await queryRows<{
      id: string;
      integration_id: string | null;
      repository: string;
      number: number;
      created_at: string;
    }>(
      this.manager,
      `SELECT id, integration_id, preview->>'repository' AS repository, (preview->'pull_request'->>'number')::int AS number,
              created_at::text AS created_at
         FROM deployments WHERE preview_of IS NOT NULL AND preview ? 'repository' ` +
        `AND preview->>'repository' IS NOT NULL AND status <> 'AWAITING_DELETE'` +
        (after ? ` AND (created_at, id) > ($2::timestamptz, $3::uuid)` : '') +
        ` ORDER BY created_at, id LIMIT $1`,
      after ? [limit, after.createdAt, after.id] : [limit],
    );
    return rows.map((r) => ({
      id: r.id,
      integrationId: r.integration_id,
      repository: r.repository,
      number: Number(r.number),
      cursor: { createdAt: r.created_at, id: r.id },
    }));
  }
}
