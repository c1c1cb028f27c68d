import { defineRoute, eventStream, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import {
  eventPage,
  eventResponse,
  eventStreamHeaders,
  listEventsQuery,
  streamEventsQuery,
  type ListEventsQuery,
  type StreamEventsQuery,
} from '../schemas/event.schema.js';
import type { EventService } from '../services/event.service.js';

const tag = 'Events';

/** Events of the workspace (docs/api.md, Events): pages, and a Server-Sent Events stream. */
export function eventRoutes(events: EventService): RouteSpec[] {
  return [
    defineRoute<{}, ListEventsQuery>({
      method: 'get',
      path: '/v2/events',
      operationId: 'listEvents',
      summary: 'Events of the workspace after an id, oldest first',
      tag,
      auth: 'workspace',
      request: { query: listEventsQuery },
      responses: { 200: { description: 'A page of events; pass `offset` back as `after`', schema: eventPage } },
      handler: async (ctx) =>
        ok(await events.page(workspaceOf(ctx), ctx.query.after || null, ctx.query.limit, ctx.query)),
    }),
    defineRoute<{}, StreamEventsQuery>({
      method: 'get',
      path: '/v2/events/stream',
      operationId: 'streamEvents',
      summary:
        'Events of the workspace as Server-Sent Events (id: the event id; event: its type); Last-Event-ID resumes',
      tag,
      auth: 'workspace',
      request: { query: streamEventsQuery, headers: eventStreamHeaders },
      responses: {
        200: {
          description:
            'Server-Sent Events: `id:` the event id, `event:` its type, `data:` the Event; a comment line every 15 s',
          contentType: 'text/event-stream',
          schema: eventResponse,
        },
      },
      handler: async (ctx) => {
        const given = (ctx.headers['last-event-id'] as string | undefined) ?? ctx.query.after;
        // Without a cursor, the stream starts at the newest event as of this request: fixed
        // before the stream opens, so whatever happens once a client sees it open is sent.
        const from = given ?? (await events.latestId(workspaceOf(ctx)));
        return eventStream((sink) => events.stream(workspaceOf(ctx), from, ctx.query, sink));
      },
    }),
  ];
}
