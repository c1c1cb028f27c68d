import { queryRows, type EntityManager } from '@slipway/db';

/** One `revision_events` row as the transition metrics observe it; ids and durations as text (bigint). */
export interface RevisionEventRow {
  id: string;
  from_status: string | null;
  to_status: string;
  time_in_status_ms: string | null;
}

/**
 * The reads of `revision_events` behind the api's transition metrics: a cursor over the ids
 * (bigserial, so they commit out of order) and a look-up of ids the cursor skipped. Reads only,
 * no locks; the rows are appended by the status transition (`status-transitions.ts`).
 */
export class RevisionEventReads {
  constructor(private readonly manager: EntityManager) {}

  /** The highest id so far, 0 when there are none; as text. */
  async lastId(): Promise<string> {
    const [row] = await queryRows<{ max: string }>(
      this.manager,
      'SELECT coalesce(max(id), 0)::text AS max FROM revision_events',
    );
    return row.max;
  }

  /** Up to `limit` events after the id `cursor`, in id order. */
  after(cursor: string, limit: number): Promise<RevisionEventRow[]> {
    return queryRows<RevisionEventRow>(
      this.manager,
      // The bigint column, not the text output column `id::text` is also named after.
      `SELECT id::text, from_status, to_status, time_in_status_ms::text
           FROM revision_events WHERE id > $1::bigint ORDER BY revision_events.id LIMIT $2`,
      [cursor, limit],
    );
  }

  /** Those of the given ids that exist now, in no particular order. */
  withIds(ids: readonly string[]): Promise<RevisionEventRow[]> {
    return queryRows<RevisionEventRow>(
      this.manager,
      `SELECT id::text, from_status, to_status, time_in_status_ms::text FROM revision_events WHERE id = ANY($1::bigint[])`,
      [ids],
    );
  }
}
