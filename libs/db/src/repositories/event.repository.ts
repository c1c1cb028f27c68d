import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** Postgres NOTIFY channel told the workspace id whenever an event of it is numbered (committed). */
export const EVENTS_CHANNEL = 'slipway_events';

export interface StoredEvent {
  id: string;
  type: string;
  created_at: Date;
  deployment_id: string | null;
  revision_id: string | null;
  data: Record<string, unknown>;
}

/**
 * The public shape of an event (docs/api.md, Events): what `/v2/events` answers and what a
 * webhook delivery carries as its body.
 */
export function publicEvent(e: StoredEvent) {
  return {
    id: e.id,
    type: e.type,
    created_at: e.created_at.toISOString(),
    deployment_id: e.deployment_id,
    revision_id: e.revision_id,
    data: e.data,
  };
}

export type PublicEvent = ReturnType<typeof publicEvent>;

export interface EventFilter {
  deploymentId?: string;
  types?: string[];
}

/**
 * Events of a workspace (docs/api.md, Events), written by database triggers on every deployment
 * and revision change; ids grow in commit order within a workspace, so `after` never skips one.
 */
export class EventRepository {
  constructor(private readonly manager: EntityManager) {}

  /** The oldest `limit` events after the id `after` (all when null), oldest first. */
  after(workspaceId: string, after: string | null, limit: number, filter: EventFilter = {}): Promise<StoredEvent[]> {
    const params: unknown[] = [workspaceId, after ?? '0', limit];
    const where = ['workspace_id = $1', 'id > $2::bigint'];
    if (filter.deploymentId) where.push(`deployment_id = $${params.push(filter.deploymentId)}`);
    if (filter.types?.length) where.push(`type = ANY($${params.push(filter.types)}::text[])`);
    // ORDER BY names the table's bigint column: a bare `id` would be the text output column of the
    // same name, which sorts '1000' before '999' and would make `after` skip events.
    return queryRows<StoredEvent>(
      this.manager,
      `SELECT id::text AS id, type, created_at, deployment_id, revision_id, data FROM events
        WHERE ${where.join(' AND ')} ORDER BY events.id LIMIT $3`,
      params,
    );
  }

  /** The id of the workspace's newest event, or null: where a stream without a cursor starts. */
  async latestId(workspaceId: string): Promise<string | null> {
    const [row] = await queryRows<{ id: string | null }>(
      this.manager,
      `SELECT max(id)::text AS id FROM events WHERE workspace_id = $1 AND id IS NOT NULL`,
      [workspaceId],
    );
    return row?.id ?? null;
  }
}
