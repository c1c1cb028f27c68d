/** Where a streaming service writes Server-Sent Events; the http layer (http/sse.ts) serves them. */
export interface EventSink {
  /** One event; `data` is sent as one line of JSON. */
  send(event: { id?: string; event?: string; data: unknown }): void;
  /** Aborted when the client goes away: stop reading and return. */
  readonly signal: AbortSignal;
}

/** A stream of events a handler answers with. */
export type EventStream = (sink: EventSink) => Promise<void>;
