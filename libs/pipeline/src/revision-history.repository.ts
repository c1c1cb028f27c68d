import type { RevisionStatus } from '@slipway/domain';
import { queryRows, type EntityManager } from '@slipway/db';

/** One recorded status change of a revision (a `revision_events` row). */
export interface StatusChange {
  from: RevisionStatus | null;
  to: RevisionStatus;
  at: Date;
  /** How long the revision had been in `from` when it moved. */
  timeInStatusMs: number | null;
}

export interface RevisionHistory {
  revisionId: string;
  status: RevisionStatus;
  statusMessage: string | null;
  createdAt: Date;
  changes: StatusChange[];
}

/**
 * The status history of a deployment's recent revisions, read from the `revision_events` rows
 * the transition function appends with every change (libs/pipeline status-transitions). Reads only.
 */
export class RevisionHistoryRepository {
  constructor(private readonly manager: EntityManager) {}

  /** The newest `limit` revisions of the deployment, newest first, each with its changes oldest first. */
  async recent(deploymentId: string, limit: number): Promise<RevisionHistory[]> {
    const rows = await queryRows<{
      id: string;
      status: RevisionStatus;
      status_message: string | null;
      created_at: Date;
      changes: Array<{
        from: RevisionStatus | null;
        to: RevisionStatus;
        at: string;
        ms: string | number | null;
      }> | null;
    }>(
      this.manager,
      `SELECT r.id, r.status, r.status_message, r.created_at,
              (SELECT json_agg(json_build_object('from', e.from_status, 'to', e.to_status, 'at', e.created_at,
                                                 'ms', e.time_in_status_ms) ORDER BY e.id)
                 FROM revision_events e WHERE e.revision_id = r.id) AS changes
         FROM revisions r
        WHERE r.deployment_id = $1
        ORDER BY r.created_at DESC, r.id DESC
        LIMIT $2`,
      [deploymentId, limit],
    );
    return rows.map((row) => ({
      revisionId: row.id,
      status: row.status,
      statusMessage: row.status_message,
      createdAt: row.created_at,
      changes: (row.changes ?? []).map((c) => ({
        from: c.from,
        to: c.to,
        at: new Date(c.at),
        timeInStatusMs: c.ms == null ? null : Number(c.ms),
      })),
    }));
  }
}
