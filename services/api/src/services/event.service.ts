import { EVENTS_CHANNEL, EventRepository, publicEvent, type DataSource, type PgNotifications } from '@slipway/db';
import type { EventSink } from './event-sink.js';
import type { EventFilters } from '../schemas/event.schema.js';

/** The API shape of an event (docs/api.md, Events). */
export const presentEvent = publicEvent;

export type EventView = ReturnType<typeof presentEvent>;

const STREAM_BATCH = 500;
/** Between reads when no notification wakes a stream (the fallback poll). */
const STREAM_IDLE_MS = 30_000;
const STREAM_IDLE_UNCONNECTED_MS = 1_000;

const filterOf = (f: EventFilters) => ({ deploymentId: f.deployment_id, types: f.types });

/**
 * Events of a workspace: pages and a live stream. Followers sleep until the process's one
 * LISTEN connection says the workspace has a new event, so an idle stream costs no query.
 */
export class EventService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly notifications: PgNotifications,
  ) {}

  async page(
    workspaceId: string,
    after: string | null,
    limit: number,
    filters: EventFilters,
  ): Promise<{ resources: EventView[]; offset: string | null }> {
    const rows = await new EventRepository(this.dataSource.manager).after(workspaceId, after, limit, filterOf(filters));
    return { resources: rows.map(presentEvent), offset: rows.at(-1)?.id ?? after };
  }

  latestId(workspaceId: string): Promise<string | null> {
    return new EventRepository(this.dataSource.manager).latestId(workspaceId);
  }

  /** Every event after `from` (all when null), oldest first, until the client leaves. */
  async stream(workspaceId: string, from: string | null, filters: EventFilters, sink: EventSink): Promise<void> {
    const repo = new EventRepository(this.dataSource.manager);
    let after = from;
    while (!sink.signal.aborted) {
      const rows = await repo.after(workspaceId, after, STREAM_BATCH, filterOf(filters));
      for (const row of rows) sink.send({ id: row.id, event: row.type, data: presentEvent(row) });
      // With a filter, skipped events still move the cursor: read up to the newest seen.
      after = rows.at(-1)?.id ?? after;
      if (rows.length === STREAM_BATCH) continue;
      const idle = this.notifications.connected ? STREAM_IDLE_MS : STREAM_IDLE_UNCONNECTED_MS;
      await this.notifications.wait({ [EVENTS_CHANNEL]: workspaceId }, idle, sink.signal);
    }
  }
}
